// The dashboard: balance and equity, P&L today, this week and this month, the bot at a glance,
// active alarms, open positions with live prices, and the latest trades, all kept current by
// the live stream without reloading.

import { companion, get } from '../api.js';
import { card, fill, h, stat, table } from '../dom.js';
import { money, pct, pnl, px, qty, ratio, tone, when } from '../format.js';
import { positionsPanel } from '../positions.js';

export function render(page, ctx) {
  const figures = h('div', { class: 'stats', id: 'figures', 'data-state': 'loading' });
  const botLine = h('div', { class: 'bot-line', id: 'bot-line' });
  const alarms = h('div', { id: 'alarms' });
  const recent = h('div', { id: 'recent', 'data-state': 'loading' });
  const positions = positionsPanel(ctx, {
    onChange: (rows) => {
      const unrealized = rows.reduce((sum, p) => sum + Number(p.unrealized_pnl || 0), 0);
      const cell = document.getElementById('stat-unrealized');
      if (cell) {
        cell.className = `stat-value ${tone(unrealized)}`;
        fill(cell, pnl(unrealized));
      }
    },
  });

  page.append(
    h('h1', {}, 'Dashboard'),
    botLine,
    figures,
    alarms,
    card('Open positions', positions.element),
    card('Latest trades', recent),
  );

  async function loadFigures() {
    try {
      const [balance, dash] = await Promise.all([get('/account/balance'), get('/analytics/dashboard')]);
      const period = (label, f, id) => stat(label, `${pnl(f.pnl)} (${pct(f.pnl_pct)})`, { id, tone: tone(f.pnl) });
      fill(figures,
        stat('Equity', money(balance.equity), { id: 'stat-equity' }),
        stat('Cash', money(balance.cash), { id: 'stat-cash' }),
        stat('Unrealized P&L', pnl(balance.unrealized_pnl), { id: 'stat-unrealized', tone: tone(balance.unrealized_pnl) }),
        period('Today', dash.today, 'stat-today'),
        period('This week', dash.week, 'stat-week'),
        period('This month', dash.month, 'stat-month'),
        stat('Win rate (month)', ratio(dash.month.win_rate), { id: 'stat-win-rate' }),
        stat('Trades today', String(dash.today.trades), { id: 'stat-trades-today' }));
      figures.dataset.state = 'ready';
    } catch (error) {
      fill(figures, h('p', { class: 'error-text' }, error.message));
      figures.dataset.state = 'error';
    }
  }

  async function loadBot() {
    try {
      drawBot(await get('/trading/status'));
    } catch (error) {
      fill(botLine, h('p', { class: 'error-text' }, error.message));
    }
  }

  function drawBot(status) {
    botLine.dataset.status = status.status;
    fill(botLine,
      h('span', { class: `badge status-${status.status}`, id: 'bot-status' }, status.status),
      status.status === 'stopped'
        ? h('span', {}, 'Your bot is stopped. ', h('a', { href: '#/bot' }, 'Start it'), ' to trade.')
        : h('span', {}, `${status.paper_trading ? 'Paper' : 'Live'} on ${status.broker || '—'} · ${status.strategy} · ${status.symbols.join(', ')} · last scan ${when(status.last_scan)}`),
      status.last_error ? h('span', { class: 'error-text' }, status.last_error) : null);
  }

  async function loadAlarms() {
    try {
      const data = await companion('/api/alarms/active');
      const list = data.alarms || [];
      fill(alarms, list.length
        ? card('Active alarms', h('ul', { class: 'alarms' }, list.map((a) => h('li', { class: `alarm level-${String(a.level).toLowerCase()}` },
          h('strong', {}, a.level), ' ', a.message, a.recommended_action ? h('small', {}, ` — ${a.recommended_action}`) : null))))
        : '');
    } catch (_) {
      fill(alarms);
    }
  }

  const tradeColumns = [
    { label: 'Symbol', value: (t) => h('a', { href: `#/chart/${encodeURIComponent(t.symbol)}` }, t.symbol) },
    { label: 'Side', value: (t) => t.side },
    { label: 'Status', value: (t) => t.status || (t.closed_at ? 'closed' : 'open') },
    { label: 'Quantity', numeric: true, value: (t) => qty(t.quantity) },
    { label: 'Entry', numeric: true, value: (t) => px(t.entry_price) },
    { label: 'Exit', numeric: true, value: (t) => px(t.exit_price) },
    { label: 'P&L', numeric: true, value: (t) => (t.realized_pnl === null || t.realized_pnl === undefined ? '—' : pnl(t.realized_pnl)), class: (t) => tone(t.realized_pnl) },
    { label: 'Opened', value: (t) => when(t.opened_at) },
  ];

  async function loadRecent() {
    try {
      const data = await get('/account/history?per_page=5');
      fill(recent, table(tradeColumns, data.trades, {
        id: 'recent-table',
        key: (t) => t.trade_id,
        empty: 'No trades yet. Start your bot and its trades appear here as they happen.',
      }));
      recent.dataset.state = 'ready';
      recent.dataset.count = String(data.trades.length);
    } catch (error) {
      fill(recent, h('p', { class: 'error-text' }, error.message));
    }
  }

  const figuresSoon = ctx.refresher(loadFigures, 1500);
  const recentSoon = ctx.refresher(loadRecent);
  const alarmsSoon = ctx.refresher(loadAlarms);
  ctx.live('trade_executed', () => {
    recentSoon();
    figuresSoon();
  });
  ctx.live('bot_status', (data) => {
    if (data.status) loadBot();
  });
  ctx.live('alarm_triggered', alarmsSoon);
  ctx.live('alarm_cleared', alarmsSoon);

  loadBot();
  loadFigures();
  loadAlarms();
  loadRecent();
}
