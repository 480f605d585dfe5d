// The /trades page of tradehost: statistics, open positions, trade history and the raw ledger
// of the signed-in account (docs/companion.md, section D). Plain JavaScript, no dependencies.
// Every value from the server is inserted with textContent, never as HTML.
'use strict';

(() => {
  const TOKEN_KEY = 'tradehost_token';
  // The original client kept its token here; a token found there is used as well.
  const LEGACY_TOKEN_KEY = 'nija_token';
  const REFRESH_MS = 30000;
  const FILTER_DELAY_MS = 300;

  const TABS = {
    positions: {
      path: '/api/positions/open',
      params: [],
      key: 'positions',
      table: 'open_positions',
      label: 'open positions',
      empty: 'No open positions',
      render: positionRow,
    },
    history: {
      path: '/api/trades/history',
      params: [['limit', '50']],
      key: 'trades',
      table: 'completed_trades',
      label: 'trade history',
      empty: 'No trade history',
      render: tradeRow,
    },
    ledger: {
      path: '/api/trades/ledger',
      params: [['limit', '100']],
      key: 'transactions',
      table: 'trade_ledger',
      label: 'the ledger',
      empty: 'No ledger transactions',
      render: ledgerRow,
    },
  };

  const state = {
    token: null,
    admin: false,
    tab: 'positions',
    // Only the answer to the latest table request is drawn (filters can change mid-request).
    seq: 0,
    timer: null,
    filterTimer: null,
    refreshing: false,
  };

  const $ = (id) => document.getElementById(id);

  class AuthError extends Error {}

  // ---- token ---------------------------------------------------------------------------------

  function readToken() {
    try {
      return localStorage.getItem(TOKEN_KEY) || localStorage.getItem(LEGACY_TOKEN_KEY);
    } catch (_) {
      return null;
    }
  }

  function storeToken(token) {
    try {
      localStorage.setItem(TOKEN_KEY, token);
    } catch (_) {
      // Storage refused (private mode): the token lives for this page only.
    }
  }

  function dropToken() {
    try {
      localStorage.removeItem(TOKEN_KEY);
      localStorage.removeItem(LEGACY_TOKEN_KEY);
    } catch (_) {
      // nothing stored
    }
  }

  // The role claim of the JWT, only to decide whether to offer the user filter; the server
  // checks it again on every call.
  function tokenRole(token) {
    try {
      const part = token.split('.')[1];
      const base64 = part.replace(/-/g, '+').replace(/_/g, '/');
      const padded = base64 + '='.repeat((4 - (base64.length % 4)) % 4);
      return JSON.parse(atob(padded)).role || null;
    } catch (_) {
      return null;
    }
  }

  // ---- errors --------------------------------------------------------------------------------

  function showError(message) {
    const box = $('error');
    box.textContent = message;
    box.hidden = false;
  }

  function clearError() {
    const box = $('error');
    box.textContent = '';
    box.hidden = true;
  }

  // A readable message from an error body: `error` (a string, or the platform's
  // {code, message}), `detail` (a string, or FastAPI's list of {msg}), or `message`.
  function messageFrom(body) {
    if (!body || typeof body !== 'object') {
      return null;
    }
    const error = body.error;
    if (typeof error === 'string' && error) {
      return error;
    }
    if (error && typeof error === 'object' && typeof error.message === 'string') {
      return error.message;
    }
    const detail = body.detail;
    if (typeof detail === 'string' && detail) {
      return detail;
    }
    if (Array.isArray(detail)) {
      const parts = detail
        .map((item) => (item && typeof item === 'object' ? item.msg || item.message : item))
        .filter((item) => typeof item === 'string' && item);
      if (parts.length) {
        return parts.join('; ');
      }
    }
    if (typeof body.message === 'string' && body.message) {
      return body.message;
    }
    return null;
  }

  async function errorMessage(response) {
    let body = null;
    try {
      body = await response.json();
    } catch (_) {
      // not JSON
    }
    return messageFrom(body) || `The server answered ${response.status} ${response.statusText}`.trim();
  }

  // ---- requests ------------------------------------------------------------------------------

  function authHeaders() {
    return { Authorization: `Bearer ${state.token}`, Accept: 'application/json' };
  }

  async function apiGet(path) {
    const response = await fetch(path, { headers: authHeaders(), cache: 'no-store' });
    if (response.status === 401) {
      const message = await errorMessage(response);
      signOut(`Please sign in again (${message}).`);
      throw new AuthError(message);
    }
    if (!response.ok) {
      throw new Error(await errorMessage(response));
    }
    try {
      return await response.json();
    } catch (_) {
      throw new Error('The server sent an answer that is not JSON');
    }
  }

  // The query string: fixed parameters, then the filters. Values are URL-encoded.
  function queryString(fixed, withSymbol) {
    const params = fixed.slice();
    const symbol = $('symbol-filter').value.trim();
    if (withSymbol && symbol) {
      params.push(['symbol', symbol]);
    }
    const user = userFilter();
    if (user) {
      params.push(['user_id', user]);
    }
    if (!params.length) {
      return '';
    }
    return `?${params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`;
  }

  function userFilter() {
    return state.admin ? $('user-filter').value.trim() : '';
  }

  // ---- formatting ----------------------------------------------------------------------------

  function toNumber(value) {
    if (typeof value === 'number') {
      return Number.isFinite(value) ? value : null;
    }
    if (typeof value === 'string' && value.trim() !== '') {
      const n = Number(value);
      return Number.isFinite(n) ? n : null;
    }
    return null;
  }

  function fixed(value, digits) {
    const n = toNumber(value);
    return n === null ? '-' : n.toFixed(digits);
  }

  function money(value) {
    const n = toNumber(value);
    if (n === null) {
      return '-';
    }
    const rounded = Number(n.toFixed(2));
    const digits = Math.abs(rounded).toLocaleString('en-US', {
      minimumFractionDigits: 2,
      maximumFractionDigits: 2,
    });
    return `${rounded < 0 ? '-' : ''}$${digits}`;
  }

  // Prices of cheap assets keep their significant digits.
  function price(value) {
    const n = toNumber(value);
    if (n === null) {
      return '-';
    }
    if (n !== 0 && Math.abs(n) < 1) {
      return `$${n.toPrecision(4)}`;
    }
    return money(n);
  }

  // A stop loss or take profit: '-' when there is none.
  function optionalPrice(value) {
    const n = toNumber(value);
    return n ? price(n) : '-';
  }

  function percent(value) {
    const n = toNumber(value);
    if (n === null) {
      return '-';
    }
    return `${n >= 0 ? '+' : ''}${n.toFixed(2)}%`;
  }

  function duration(value) {
    const s = toNumber(value);
    if (s === null) {
      return '-';
    }
    if (s < 60) {
      return `${Math.floor(s)}s`;
    }
    if (s < 3600) {
      return `${Math.floor(s / 60)}m`;
    }
    if (s < 86400) {
      return `${(s / 3600).toFixed(1)}h`;
    }
    return `${(s / 86400).toFixed(1)}d`;
  }

  function time(value) {
    if (!value) {
      return '-';
    }
    const date = new Date(value);
    return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
  }

  function text(value) {
    return value === null || value === undefined || value === '' ? '-' : String(value);
  }

  // ---- table rows ----------------------------------------------------------------------------

  function row(id, positionId) {
    const tr = document.createElement('tr');
    tr.dataset.id = id === null || id === undefined ? '' : String(id);
    if (positionId !== null && positionId !== undefined) {
      tr.dataset.positionId = String(positionId);
    }
    return tr;
  }

  function cell(tr, value, className) {
    const td = document.createElement('td');
    td.textContent = value;
    if (className) {
      td.className = className;
    }
    tr.appendChild(td);
    return td;
  }

  function badge(tr, value, className) {
    const td = document.createElement('td');
    const span = document.createElement('span');
    span.className = `badge ${className}`;
    span.textContent = text(value);
    td.appendChild(span);
    tr.appendChild(td);
  }

  function sideClass(side) {
    return String(side || '').toLowerCase() === 'long' ? 'badge-long' : 'badge-short';
  }

  function signClass(value) {
    const n = toNumber(value);
    if (n === null) {
      return 'num';
    }
    return n >= 0 ? 'num positive' : 'num negative';
  }

  function positionRow(p) {
    const tr = row(p.position_id ?? p.id, p.position_id);
    cell(tr, text(p.symbol));
    badge(tr, p.side, sideClass(p.side));
    cell(tr, price(p.entry_price), 'num');
    cell(tr, fixed(p.quantity, 6), 'num');
    cell(tr, money(p.size_usd), 'num');
    cell(tr, optionalPrice(p.stop_loss), 'num');
    cell(tr, optionalPrice(p.take_profit_1), 'num');
    cell(tr, time(p.entry_time));
    cell(tr, text(p.user_id));
    return tr;
  }

  function tradeRow(t) {
    const tr = row(t.id, t.position_id);
    cell(tr, text(t.symbol));
    badge(tr, t.side, sideClass(t.side));
    cell(tr, price(t.entry_price), 'num');
    cell(tr, price(t.exit_price), 'num');
    cell(tr, money(t.size_usd), 'num');
    cell(tr, money(t.net_profit), signClass(t.net_profit));
    cell(tr, percent(t.profit_pct), signClass(t.profit_pct));
    cell(tr, duration(t.duration_seconds), 'num');
    cell(tr, text(t.exit_reason));
    cell(tr, time(t.exit_time));
    return tr;
  }

  function ledgerRow(l) {
    const tr = row(l.id, l.position_id);
    cell(tr, time(l.timestamp));
    cell(tr, text(l.symbol));
    badge(tr, l.side, String(l.side || '').toUpperCase() === 'BUY' ? 'badge-buy' : 'badge-sell');
    cell(tr, text(l.action));
    cell(tr, price(l.price), 'num');
    cell(tr, fixed(l.quantity, 6), 'num');
    cell(tr, money(l.size_usd), 'num');
    cell(tr, money(l.fee), 'num');
    cell(tr, text(l.user_id));
    return tr;
  }

  // ---- loading -------------------------------------------------------------------------------

  async function loadTab(name) {
    const tab = TABS[name];
    const table = $(`${name}-table`);
    const empty = $(`${name}-empty`);
    const path = tab.path + queryString(tab.params, true);
    state.seq += 1;
    const seq = state.seq;
    table.dataset.state = 'loading';
    try {
      const data = await apiGet(path);
      if (seq !== state.seq) {
        return false;
      }
      const rows = data && Array.isArray(data[tab.key]) ? data[tab.key] : [];
      const fragment = document.createDocumentFragment();
      for (const item of rows) {
        fragment.appendChild(tab.render(item || {}));
      }
      table.tBodies[0].replaceChildren(fragment);
      empty.textContent = tab.empty;
      empty.hidden = rows.length > 0;
      table.dataset.query = path;
      table.dataset.count = String(rows.length);
      table.dataset.state = 'ready';
      return true;
    } catch (err) {
      if (seq !== state.seq || err instanceof AuthError) {
        return false;
      }
      table.tBodies[0].replaceChildren();
      empty.textContent = `Error loading ${tab.label}`;
      empty.hidden = false;
      table.dataset.query = path;
      table.dataset.count = '0';
      table.dataset.state = 'error';
      showError(`Could not load ${tab.label}: ${err.message}`);
      return false;
    }
  }

  function setCount(id, value) {
    const n = toNumber(value);
    $(id).textContent = String(n === null ? 0 : n);
  }

  function setMoney(id, value, signed) {
    const el = $(id);
    const n = toNumber(value);
    el.textContent = n === null && !signed ? '-' : money(n === null ? 0 : n);
    el.classList.toggle('positive', signed && (n === null || n >= 0));
    el.classList.toggle('negative', signed && n !== null && n < 0);
  }

  async function loadStatistics() {
    try {
      const data = await apiGet(`/api/trades/statistics${queryString([], false)}`);
      const s = (data && data.statistics) || {};
      setCount('stats-total-trades', s.total_trades);
      $('stats-win-rate').textContent = `${(toNumber(s.win_rate) || 0).toFixed(1)}%`;
      setMoney('stats-total-pnl', s.total_pnl, true);
      setCount('stats-open-positions', s.open_positions);
      $('stats-total-fees').textContent = money(toNumber(s.total_fees) || 0);
      setMoney('stats-best-trade', s.best_trade, false);
      return true;
    } catch (err) {
      if (!(err instanceof AuthError)) {
        showError(`Could not load the statistics: ${err.message}`);
      }
      return false;
    }
  }

  function markRefreshed() {
    $('last-refresh').textContent = `Last refreshed ${new Date().toLocaleTimeString()}`;
  }

  async function refresh() {
    if (!state.token || state.refreshing) {
      return;
    }
    state.refreshing = true;
    clearError();
    try {
      const results = await Promise.all([loadStatistics(), loadTab(state.tab)]);
      if (results.every(Boolean)) {
        markRefreshed();
      }
    } finally {
      state.refreshing = false;
    }
  }

  async function reloadTab() {
    clearError();
    if (await loadTab(state.tab)) {
      markRefreshed();
    }
  }

  // ---- tabs and filters ----------------------------------------------------------------------

  function selectTab(name) {
    state.tab = name;
    for (const key of Object.keys(TABS)) {
      const button = $(`tab-${key}`);
      const active = key === name;
      button.classList.toggle('active', active);
      button.setAttribute('aria-selected', String(active));
      $(`panel-${key}`).hidden = !active;
    }
  }

  function filterChanged(withStatistics) {
    clearTimeout(state.filterTimer);
    state.filterTimer = setTimeout(() => {
      if (withStatistics) {
        refresh();
      } else {
        reloadTab();
      }
    }, FILTER_DELAY_MS);
  }

  // ---- export --------------------------------------------------------------------------------

  function filenameFrom(disposition) {
    if (!disposition) {
      return null;
    }
    const match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition);
    return match ? decodeURIComponent(match[1].trim()) : null;
  }

  // The export route needs the token, so it is fetched and handed to the browser as a blob.
  async function exportTable(format, button) {
    const tab = TABS[state.tab];
    const params = [['table', tab.table], ['format', format]];
    const user = userFilter();
    if (user) {
      params.push(['user_id', user]);
    }
    const path = `/api/trades/export?${params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`;
    button.disabled = true;
    clearError();
    try {
      const response = await fetch(path, { headers: { Authorization: `Bearer ${state.token}` }, cache: 'no-store' });
      if (response.status === 401) {
        signOut(`Please sign in again (${await errorMessage(response)}).`);
        return;
      }
      if (!response.ok) {
        showError(`Export failed: ${await errorMessage(response)}`);
        return;
      }
      const blob = await response.blob();
      const name = filenameFrom(response.headers.get('Content-Disposition')) || `tradehost_${tab.table}.${format}`;
      const url = URL.createObjectURL(blob);
      const link = document.createElement('a');
      link.href = url;
      link.download = name;
      link.hidden = true;
      document.body.appendChild(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } catch (err) {
      showError(`Export failed: ${err.message}`);
    } finally {
      button.disabled = false;
    }
  }

  // ---- session -------------------------------------------------------------------------------

  function resetData() {
    for (const key of Object.keys(TABS)) {
      const table = $(`${key}-table`);
      table.tBodies[0].replaceChildren();
      table.dataset.state = 'idle';
      delete table.dataset.query;
      delete table.dataset.count;
      $(`${key}-empty`).hidden = true;
    }
    for (const id of ['stats-total-trades', 'stats-open-positions']) {
      $(id).textContent = '0';
    }
    $('stats-win-rate').textContent = '0.0%';
    setMoney('stats-total-pnl', 0, true);
    $('stats-total-fees').textContent = '$0.00';
    setMoney('stats-best-trade', null, false);
    $('last-refresh').textContent = 'Not refreshed yet';
  }

  function showLogin(message) {
    clearInterval(state.timer);
    clearTimeout(state.filterTimer);
    state.timer = null;
    state.token = null;
    state.seq += 1;
    $('app').hidden = true;
    $('session').hidden = true;
    $('login').hidden = false;
    if (message) {
      showError(message);
    } else {
      clearError();
    }
    $('login-email').focus();
  }

  function signOut(message) {
    dropToken();
    resetData();
    showLogin(message);
  }

  function enterApp(token) {
    state.token = token;
    state.admin = tokenRole(token) === 'admin';
    $('user-filter-box').hidden = !state.admin;
    if (!state.admin) {
      $('user-filter').value = '';
    }
    $('login').hidden = true;
    $('app').hidden = false;
    $('session').hidden = false;
    clearError();
    selectTab(state.tab);
    refresh();
    clearInterval(state.timer);
    state.timer = setInterval(refresh, REFRESH_MS);
  }

  async function signIn(event) {
    event.preventDefault();
    const button = $('login-submit');
    const email = $('login-email').value.trim();
    const password = $('login-password').value;
    if (!email || !password) {
      showError('Enter your e-mail address and password.');
      return;
    }
    button.disabled = true;
    clearError();
    try {
      const response = await fetch('/api/auth/login', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ email, password }),
        cache: 'no-store',
      });
      if (!response.ok) {
        showError(await errorMessage(response));
        return;
      }
      const body = await response.json();
      const token = body && (body.access_token || (body.data && body.data.access_token));
      if (typeof token !== 'string' || !token) {
        showError('The server did not send an access token.');
        return;
      }
      storeToken(token);
      $('login-password').value = '';
      enterApp(token);
    } catch (err) {
      showError(`Sign-in failed: ${err.message}`);
    } finally {
      button.disabled = false;
    }
  }

  function init() {
    $('login-form').addEventListener('submit', signIn);
    $('sign-out').addEventListener('click', () => signOut(null));
    $('refresh').addEventListener('click', () => refresh());
    for (const key of Object.keys(TABS)) {
      $(`tab-${key}`).addEventListener('click', () => {
        selectTab(key);
        reloadTab();
      });
    }
    $('symbol-filter').addEventListener('input', () => filterChanged(false));
    $('user-filter').addEventListener('input', () => filterChanged(true));
    for (const id of ['symbol-filter', 'user-filter']) {
      $(id).addEventListener('keydown', (event) => {
        if (event.key === 'Enter') {
          clearTimeout(state.filterTimer);
          if (id === 'user-filter') {
            refresh();
          } else {
            reloadTab();
          }
        }
      });
    }
    $('export-csv').addEventListener('click', (event) => exportTable('csv', event.currentTarget));
    $('export-pdf').addEventListener('click', (event) => exportTable('pdf', event.currentTarget));

    const token = readToken();
    if (token) {
      enterApp(token);
    } else {
      showLogin(null);
    }
  }

  init();
})();
