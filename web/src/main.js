// The tradehost web app: the shell (navigation, theme, live status, kill-switch banner) and a
// hash router that shows one page at a time. Pages get a context whose live listeners and timers
// end with the page.

import { backgroundDelay, companion, session, signOut } from './api.js';
import { h, fill, toast } from './dom.js';
import * as live from './live.js';
import * as auth from './pages/auth.js';
import * as dashboard from './pages/dashboard.js';
import * as bot from './pages/bot.js';
import * as chart from './pages/chart.js';
import * as history from './pages/history.js';
import * as brokers from './pages/brokers.js';
import * as ledger from './pages/ledger.js';
import * as performance from './pages/performance.js';
import * as settings from './pages/settings.js';
import * as subscription from './pages/subscription.js';
import * as admin from './pages/admin.js';

// Pages a signed-in user reaches from the navigation, in its order.
// `admin` pages show for the admin role only (the API refuses everyone else anyway).
const PAGES = [
  { path: 'dashboard', label: 'Dashboard', page: dashboard },
  { path: 'bot', label: 'Bot', page: bot },
  { path: 'chart', label: 'Chart', page: chart },
  { path: 'history', label: 'History', page: history },
  { path: 'ledger', label: 'Ledger', page: ledger },
  { path: 'performance', label: 'Performance', page: performance },
  { path: 'brokers', label: 'Brokers', page: brokers },
  { path: 'settings', label: 'Settings', page: settings },
  { path: 'subscription', label: 'Plan', page: subscription },
  { path: 'admin', label: 'Admin', page: admin, admin: true },
];
const visible = () => PAGES.filter((p) => !p.admin || session.isAdmin());
// Pages for signed-out visitors.
const PUBLIC = { signin: auth.signIn, register: auth.register, reset: auth.reset };

const view = document.getElementById('view');
const nav = document.getElementById('nav');
const account = document.getElementById('account');
const liveBadge = document.getElementById('live');
const killBanner = document.getElementById('kill-banner');

let current = null;
// Set while the person signs out, so the page does not read as an expired session.
let leaving = false;

// What a page may use; everything it registers ends when the page does.
function context(params) {
  const undo = [];
  return {
    params,
    navigate,
    signedIn: afterSignIn,
    live(type, handler) {
      undo.push(live.on(type, handler));
    },
    every(ms, task) {
      const id = setInterval(task, ms);
      undo.push(() => clearInterval(id));
    },
    // A debounced reload for live updates that leaves the rate-limit budget to the person.
    refresher(task, debounceMs = 800) {
      let pending = null;
      undo.push(() => clearTimeout(pending));
      return () => {
        if (pending) return;
        pending = setTimeout(() => {
          pending = null;
          const wait = backgroundDelay();
          if (wait) pending = setTimeout(() => { pending = null; task(); }, wait);
          else task();
        }, debounceMs);
      };
    },
    onEnd(task) {
      undo.push(task);
    },
    end() {
      for (const task of undo.splice(0)) task();
    },
  };
}

function navigate(path) {
  if (location.hash === `#/${path}`) route();
  else location.hash = `#/${path}`;
}

function parseHash() {
  const [path, search = ''] = location.hash.replace(/^#\/?/, '').split('?');
  const [name, ...rest] = path.split('/');
  return { name: name || '', rest: rest.map(decodeURIComponent), search: new URLSearchParams(search) };
}

function route() {
  current?.end();
  const { name, rest, search } = parseHash();
  const signedIn = Boolean(session.current);
  // The e-mailed reset link opens /reset-password?token=…
  if (location.pathname === '/reset-password' && !name) {
    window.history.replaceState(null, '', `${location.pathname}${location.search}#/reset`);
    route();
    return;
  }
  if (name === 'reset') {
    show(PUBLIC.reset, name, { rest, search });
    return;
  }
  if (!signedIn) {
    const page = PUBLIC[name];
    if (!page) {
      if (name) sessionStorage.setItem('tradehost.return', location.hash);
      replaceRoute('#/signin');
      return;
    }
    show(page, name, { rest, search });
    return;
  }
  const entry = visible().find((p) => p.path === name);
  if (!entry) {
    replaceRoute('#/dashboard');
    return;
  }
  show(entry.page.render, name, { rest, search });
}

function replaceRoute(hash) {
  window.history.replaceState(null, '', `/${hash}`);
  route();
}

function show(render, name, params) {
  current = context(params);
  drawShell(name);
  const page = h('div', { class: 'page', 'data-page': name });
  fill(view, page);
  try {
    render(page, current);
  } catch (error) {
    console.error(error);
    toast('This page failed to draw; reload to try again.', 'error');
  }
  view.focus({ preventScroll: true });
}

function drawShell(active) {
  const signedIn = Boolean(session.current);
  document.body.classList.toggle('signed-in', signedIn);
  fill(nav, signedIn
    ? visible().map((p) => h('a', { href: `#/${p.path}`, 'aria-current': p.path === active ? 'page' : null }, p.label))
    : []);
  if (!signedIn) {
    fill(account);
    return;
  }
  const signOutButton = h('button', { type: 'button', class: 'ghost', id: 'sign-out' }, 'Sign out');
  signOutButton.addEventListener('click', async () => {
    leaving = true;
    await signOut().catch(() => {});
    toast('Signed out.', 'success');
  });
  fill(account, h('span', { class: 'who' }, session.current.user?.email || ''), signOutButton);
}

// The theme: the person's choice, else the system's.
const THEME = 'tradehost.theme';
function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  const button = document.getElementById('theme');
  button.textContent = theme === 'dark' ? 'Light theme' : 'Dark theme';
  button.setAttribute('aria-pressed', String(theme === 'dark'));
}
applyTheme(localStorage.getItem(THEME) || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'));
document.getElementById('theme').addEventListener('click', () => {
  const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
  localStorage.setItem(THEME, next);
  applyTheme(next);
  document.dispatchEvent(new Event('themechange'));
});

live.onState((state) => {
  liveBadge.dataset.state = state;
  liveBadge.textContent = state === 'live' ? 'Live' : state === 'connecting' ? 'Connecting…' : 'Offline';
});

// The operator's kill switch, announced to every signed-in page at once.
live.on('kill_switch', (data) => {
  const active = data.status !== 'lifted' && data.status !== 'deactivated';
  killBanner.hidden = !active;
  fill(killBanner, active ? (data.message || 'Trading is halted by the operator.') : '');
});

// Whether trading is halted, for the banner when a page first loads (later changes arrive live).
async function loadKillSwitch() {
  try {
    const safety = await companion('/api/safety/status');
    killBanner.hidden = !safety.kill_switch_active;
    fill(killBanner, safety.kill_switch_active ? safety.status_message : '');
  } catch (_) {
    // the banner waits for the live event
  }
}

session.onChange((next) => {
  if (next) {
    live.start();
    return;
  }
  killBanner.hidden = true;
  if (leaving) {
    leaving = false;
    sessionStorage.removeItem('tradehost.return');
  } else {
    sessionStorage.setItem('tradehost.return', location.hash);
    toast('Your session has ended; sign in again to continue.', 'info');
  }
  replaceRoute('#/signin');
});

// After signing in, back to where the person was.
function afterSignIn() {
  const back = sessionStorage.getItem('tradehost.return');
  sessionStorage.removeItem('tradehost.return');
  live.start();
  loadKillSwitch();
  navigate(back && back.startsWith('#/') && !back.startsWith('#/signin') ? back.slice(2) : 'dashboard');
}

window.addEventListener('hashchange', route);
if (session.current) {
  live.start();
  loadKillSwitch();
}
route();
