// The platform API from the browser: the signed-in session (tokens in localStorage), bearer
// headers, transparent refresh of an expired access token (refresh tokens rotate on every use),
// the API's error message on failure, and the rate-limit budget the pages spend.

const STORE = 'tradehost.session';

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || {};
  }
}

const listeners = new Set();

// The session: {access_token, refresh_token, user, role}. `onSession` hears every change
// (sign in, refresh, sign out) with the new session or null.
export const session = {
  current: load(),
  onChange(listener) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  set(next) {
    this.current = next;
    if (next) localStorage.setItem(STORE, JSON.stringify(next));
    else localStorage.removeItem(STORE);
    for (const listener of listeners) listener(next);
  },
  isAdmin() {
    return this.current?.role === 'admin';
  },
};

function load() {
  try {
    return JSON.parse(localStorage.getItem(STORE)) || null;
  } catch (_) {
    return null;
  }
}

// The claims of a JWT (for the role; the server checks the signature, we only read).
function claims(token) {
  try {
    const payload = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(payload));
  } catch (_) {
    return {};
  }
}

function withTokens(previous, answer) {
  return {
    ...previous,
    access_token: answer.access_token,
    refresh_token: answer.refresh_token || previous?.refresh_token,
    role: claims(answer.access_token).role || previous?.role || 'user',
  };
}

// What the last answer said about the rate limit.
export const budget = { limit: null, remaining: null, resetAt: 0 };

function noteBudget(response) {
  const limit = response.headers.get('X-RateLimit-Limit');
  const remaining = response.headers.get('X-RateLimit-Remaining');
  const reset = response.headers.get('X-RateLimit-Reset');
  if (limit !== null) budget.limit = Number(limit);
  if (remaining !== null) budget.remaining = Number(remaining);
  if (reset !== null) budget.resetAt = Number(reset) * 1000;
}

// Milliseconds to wait before a background refresh, so that what is left of the minute's
// budget stays for what the person does.
export function backgroundDelay(reserve = 5) {
  if (budget.remaining === null || budget.remaining > reserve) return 0;
  return Math.max(0, budget.resetAt - Date.now()) + 250;
}

// `read` turns the answer into the result: JSON by default, a file for `download`.
async function send(method, path, body, token, read = json) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers.Authorization = `Bearer ${token}`;
  let response;
  try {
    // Paths are relative to `/api/v1`, except the companion sets' own (`/api/...`).
    const url = path.startsWith('/api/') ? path : `/api/v1${path}`;
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (_) {
    throw new ApiError(0, 'NETWORK', 'The server cannot be reached; check the connection and try again.');
  }
  noteBudget(response);
  return read(response);
}

// The API's JSON answer, or its error as an ApiError.
async function json(response) {
  let payload = null;
  try {
    payload = await response.json();
  } catch (_) {
    payload = null;
  }
  // The platform's envelope carries `data`; some companion routes answer bare JSON.
  if (response.ok && payload !== null) return payload.success === true && 'data' in payload ? payload.data : payload;
  // The platform envelope's error is an object; the companion sets' is a string beside `code`.
  const error = typeof payload?.error === 'string'
    ? { message: payload.error, code: payload.code }
    : payload?.error || {};
  let message = error.message || `The server answered ${response.status}.`;
  if (response.status === 429) {
    const wait = response.headers.get('Retry-After');
    message = `Too many requests for your plan this minute${wait ? `; try again in ${wait} s` : ''}.`;
  }
  throw new ApiError(response.status, error.code || 'HTTP_ERROR', message, error.details);
}

// One refresh at a time, across the tabs of this browser too: refresh tokens rotate on every
// use, and a rotated one sent again would end the session everywhere. Inside the lock the
// stored session is read again, since another tab may have refreshed already.
let refreshing = null;

export function refresh(expiredToken) {
  if (!refreshing) {
    const exclusive = (task) => (navigator.locks ? navigator.locks.request('tradehost.refresh', task) : task());
    refreshing = exclusive(async () => {
      const stored = load();
      if (stored?.access_token && stored.access_token !== expiredToken && stored.refresh_token) {
        session.set(stored);
        return stored.access_token;
      }
      if (!stored?.refresh_token) {
        session.set(null);
        throw new ApiError(401, 'TOKEN_EXPIRED', 'Your session has ended; sign in again.');
      }
      try {
        const answer = await send('POST', '/auth/refresh', { refresh_token: stored.refresh_token });
        session.set(withTokens(stored, answer));
        return session.current.access_token;
      } catch (error) {
        if (error.status === 401 || error.status === 400) {
          session.set(null);
          throw new ApiError(401, 'TOKEN_EXPIRED', 'Your session has ended; sign in again.');
        }
        throw error;
      }
    }).finally(() => {
      refreshing = null;
    });
  }
  return refreshing;
}

// Another tab signed in, refreshed or signed out.
window.addEventListener('storage', (event) => {
  if (event.key !== STORE) return;
  const next = load();
  if (next?.access_token !== session.current?.access_token) session.set(next);
});

// The access token, refreshed first when it is about to expire (within a quarter of its
// lifetime, at most 30 s), so that requests do not fail for an expired token.
export async function freshToken() {
  const token = session.current?.access_token;
  if (!token || !session.current.refresh_token) return token;
  const { exp = 0, iat = 0 } = claims(token);
  const margin = Math.min(30000, ((exp - iat) * 1000) / 4);
  return exp * 1000 - Date.now() < margin ? refresh(token) : token;
}

// A request of the signed-in user. A token that expired anyway (a clock that differs from the
// server's) is refreshed once and the request sent again.
export async function api(method, path, body, read) {
  const token = await freshToken();
  try {
    return await send(method, path, body, token, read);
  } catch (error) {
    if (error.code === 'TOKEN_EXPIRED' && session.current?.refresh_token) {
      const fresh = await refresh(token);
      return send(method, path, body, fresh, read);
    }
    const tokenRefused = error.code === 'TOKEN_INVALID' || error.code === 'TOKEN_EXPIRED';
    if (tokenRefused && token && session.current?.access_token === token) {
      // Revoked elsewhere (sign-out everywhere, password change): the session is over.
      session.set(null);
    }
    throw error;
  }
}

export const get = (path) => api('GET', path);
export const post = (path, body = {}) => api('POST', path, body);
export const put = (path, body = {}) => api('PUT', path, body);
export const del = (path) => api('DELETE', path);
// A companion route (`/api/...`, outside the versioned API), same session.
export const companion = (path) => api('GET', path);

// A file the API sends as an attachment (it needs the bearer token, so a plain link cannot fetch
// it), saved through a temporary blob: link. Named as the answer's Content-Disposition says, else
// `filename`. Resolves to {filename, size}.
export async function download(path, filename) {
  const file = await api('GET', path, undefined, async (response) => {
    if (!response.ok) return json(response);
    const named = /filename="?([^";]+)"?/i.exec(response.headers.get('Content-Disposition') || '');
    return { blob: await response.blob(), filename: named ? named[1] : filename };
  });
  const url = URL.createObjectURL(file.blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = file.filename;
  document.body.append(link);
  link.click();
  link.remove();
  // Revoked later rather than at once: some browsers read the URL after click() returns.
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  return { filename: file.filename, size: file.blob.size };
}

export async function signIn(email, password) {
  const answer = await send('POST', '/auth/login', { email, password });
  session.set(withTokens({ user: answer.user }, answer));
  return answer.user;
}

export async function register(fullName, email, password) {
  await send('POST', '/auth/register', { full_name: fullName, email, password, accept_terms: true });
  return signIn(email, password);
}

export function requestReset(email) {
  return send('POST', '/auth/reset-password', { email });
}

export function confirmReset(token, newPassword) {
  return send('POST', '/auth/reset-password/confirm', { token, new_password: newPassword });
}

export async function signOut(everywhere = false) {
  try {
    await api('POST', '/auth/logout', { revoke_all: everywhere });
  } finally {
    session.set(null);
  }
}

// A query string from the defined values of `params`.
export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(name, value);
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}
