// The live event stream (`/ws/v1`): signs in with the session's token, subscribes to every
// channel, hands events to the pages listening for their type, and reconnects with backoff.
// A refreshed token is sent on the open socket; a socket closed for its token (4001) refreshes
// and reconnects.

import { freshToken, refresh, session } from './api.js';

const CHANNELS = ['positions', 'trades', 'alarms', 'bot_status'];
const handlers = new Map();
const stateListeners = new Set();

let socket = null;
let retry = 0;
let timer = null;
let wanted = false;
let opening = false;
let state = 'offline';

// Calls `handler(data, event)` for each event of `type` ('*' for all); returns the undo.
export function on(type, handler) {
  if (!handlers.has(type)) handlers.set(type, new Set());
  handlers.get(type).add(handler);
  return () => handlers.get(type)?.delete(handler);
}

// Hears 'connecting', 'live' and 'offline'.
export function onState(listener) {
  stateListeners.add(listener);
  listener(state);
  return () => stateListeners.delete(listener);
}

function setState(next) {
  state = next;
  for (const listener of stateListeners) listener(next);
}

function dispatch(event) {
  for (const type of [event.type, '*']) {
    for (const handler of handlers.get(type) || []) {
      try {
        handler(event.data || {}, event);
      } catch (error) {
        console.warn('a live event handler failed', error);
      }
    }
  }
}

export function start() {
  wanted = true;
  if (!socket && !opening) connect();
}

export function stop() {
  wanted = false;
  clearTimeout(timer);
  if (socket) {
    const closing = socket;
    socket = null;
    closing.close(1000, 'signed out');
  }
  setState('offline');
}

async function connect() {
  if (!wanted || !session.current) return;
  setState('connecting');
  opening = true;
  let token;
  try {
    token = await freshToken();
  } catch (_) {
    return; // signed out
  } finally {
    opening = false;
  }
  if (!wanted || !token || socket) return;
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const ws = new WebSocket(`${scheme}://${location.host}/ws/v1`);
  socket = ws;
  ws.addEventListener('open', () => {
    ws.send(JSON.stringify({ type: 'auth', token: `Bearer ${token}` }));
  });
  ws.addEventListener('message', (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch (_) {
      return;
    }
    if (event.type === 'auth_success') {
      if (state !== 'live') {
        for (const channel of CHANNELS) ws.send(JSON.stringify({ type: 'subscribe', channel }));
      }
      retry = 0;
      setState('live');
      return;
    }
    dispatch(event);
  });
  ws.addEventListener('close', async (close) => {
    if (socket !== ws) return;
    socket = null;
    setState('offline');
    if (!wanted) return;
    if (close.code === 4001) {
      try {
        await refresh(token);
      } catch (_) {
        return; // signed out: the session listener stops the stream
      }
    }
    const delay = Math.min(30000, 500 * 2 ** retry);
    retry += 1;
    timer = setTimeout(connect, delay);
  });
}

// A new access token (refreshed) signs the open socket in again.
session.onChange((next) => {
  if (!next) {
    stop();
    return;
  }
  if (socket && socket.readyState === WebSocket.OPEN) {
    socket.send(JSON.stringify({ type: 'auth', token: `Bearer ${next.access_token}` }));
  }
});
