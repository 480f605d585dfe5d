// The open-positions table shared by the dashboard and the chart: live prices and unrealized
// P&L from the `positions` channel, rows added and removed as trades execute, and a manual
// close with confirmation.

import { get, post, query } from './api.js';
import { act, confirmDialog, fill, h, table } from './dom.js';
import { money, pct, pnl, px, qty, tone, when } from './format.js';

// Returns {element, reload}; `symbol` limits the table to one pair; `onChange` hears the list
// each time it is drawn.
export function positionsPanel(ctx, { symbol, onChange } = {}) {
  const element = h('div', { class: 'positions', id: 'positions', 'data-state': 'loading' }, h('p', { class: 'muted' }, 'Loading positions…'));
  let rows = [];

  const closeButton = (position) => {
    const button = h('button', { type: 'button', class: 'small danger', 'data-action': 'close', 'data-position': position.position_id }, 'Close');
    button.addEventListener('click', async () => {
      const sure = await confirmDialog('Close position',
        `Close the ${position.side} ${position.symbol} position (${qty(position.quantity)}) at the market?`,
        { confirm: 'Close position', danger: true });
      if (!sure) return;
      const done = await act(button, () => post(`/account/positions/${encodeURIComponent(position.position_id)}/close`),
        `Closing ${position.symbol}…`);
      if (done) reload();
    });
    return position.status === 'closing' ? h('span', { class: 'badge warn' }, 'closing') : button;
  };

  const columns = [
    { label: 'Symbol', value: (p) => h('a', { href: `#/chart/${encodeURIComponent(p.symbol)}` }, p.symbol) },
    { label: 'Side', value: (p) => p.side },
    { label: 'Quantity', numeric: true, value: (p) => qty(p.quantity) },
    { label: 'Entry', numeric: true, value: (p) => px(p.entry_price) },
    { label: 'Price', numeric: true, value: (p) => h('span', { 'data-field': 'current_price' }, px(p.current_price)) },
    { label: 'Value', numeric: true, value: (p) => money(p.size_usd) },
    { label: 'Unrealized P&L', numeric: true, value: (p) => h('span', { 'data-field': 'unrealized_pnl', class: tone(p.unrealized_pnl) }, `${pnl(p.unrealized_pnl)} (${pct(p.unrealized_pnl_pct)})`) },
    { label: 'Stop / target', numeric: true, value: (p) => `${px(p.stop_loss)} / ${px(p.take_profit)}` },
    { label: 'Opened', value: (p) => when(p.opened_at) },
    { label: '', value: closeButton },
  ];

  function draw() {
    fill(element, table(columns, rows, {
      id: 'positions-table',
      key: (p) => p.position_id,
      empty: symbol ? `No open ${symbol} position.` : 'No open positions. A running bot opens them as its strategy signals.',
    }));
    element.dataset.state = 'ready';
    element.dataset.count = String(rows.length);
    onChange?.(rows);
  }

  async function reload() {
    try {
      const data = await get(`/account/positions${query({ symbol })}`);
      rows = data.positions || [];
      draw();
    } catch (error) {
      element.dataset.state = 'error';
      fill(element, h('p', { class: 'error-text' }, error.message));
    }
  }
  const reloadSoon = ctx.refresher(reload);

  ctx.live('position_update', (update) => {
    if (symbol && update.symbol !== symbol) return;
    const known = rows.find((p) => p.position_id === update.position_id);
    if (!known || update.status === 'closed' || update.status !== known.status) {
      reloadSoon();
      return;
    }
    Object.assign(known, {
      current_price: update.current_price,
      unrealized_pnl: update.unrealized_pnl,
      unrealized_pnl_pct: update.unrealized_pnl_pct,
    });
    const row = element.querySelector(`tr[data-id="${CSS.escape(update.position_id)}"]`);
    if (row) {
      fill(row.querySelector('[data-field=current_price]'), px(update.current_price));
      const cell = row.querySelector('[data-field=unrealized_pnl]');
      cell.className = tone(update.unrealized_pnl);
      fill(cell, `${pnl(update.unrealized_pnl)} (${pct(update.unrealized_pnl_pct)})`);
    }
    onChange?.(rows);
  });
  ctx.live('trade_executed', (trade) => {
    if (!symbol || trade.symbol === symbol) reloadSoon();
  });

  reload();
  return { element, reload, rows: () => rows };
}
