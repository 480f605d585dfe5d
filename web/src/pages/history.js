// Trade history: filters (pair, status, dates), pages, and export as CSV or JSON.

import { get, post, query } from '../api.js';
import { act, card, field, fill, h, pager, table } from '../dom.js';
import { duration, money, pct, pnl, px, qty, tone, when } from '../format.js';

const PER_PAGE = 25;

export function render(page, ctx) {
  const search = ctx.params.search;
  const filters = {
    symbol: search.get('symbol') || '',
    status: search.get('status') || '',
    start_date: search.get('start_date') || '',
    end_date: search.get('end_date') || '',
    page: Math.max(1, Number(search.get('page')) || 1),
  };

  const symbol = h('input', { id: 'history-symbol', name: 'symbol', value: filters.symbol, placeholder: 'all pairs', size: 12 });
  const status = h('select', { id: 'history-status', name: 'status' },
    [['', 'all'], ['open', 'open'], ['closed', 'closed']].map(([value, label]) => h('option', { value, selected: value === filters.status }, label)));
  const from = h('input', { id: 'history-from', name: 'start_date', type: 'date', value: filters.start_date });
  const to = h('input', { id: 'history-to', name: 'end_date', type: 'date', value: filters.end_date });
  const apply = h('button', { type: 'submit' }, 'Filter');
  const form = h('form', { class: 'grid-form filters', id: 'history-filters' },
    field('Pair', symbol), field('Status', status), field('From', from), field('To', to), h('div', { class: 'actions' }, apply));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = { symbol: symbol.value.trim().toUpperCase(), status: status.value, start_date: from.value, end_date: to.value };
    ctx.navigate(`history${query(next)}`);
  });

  const format = h('select', { id: 'export-format', 'aria-label': 'Export format' },
    h('option', { value: 'csv' }, 'CSV'), h('option', { value: 'json' }, 'JSON'));
  const exportButton = h('button', { type: 'button', id: 'export' }, 'Export');
  exportButton.addEventListener('click', async () => {
    const answer = await act(exportButton, () => post('/analytics/export', {
      format: format.value,
      data_type: 'trades',
      start_date: from.value || undefined,
      end_date: to.value || undefined,
      include_closed_positions: true,
      include_open_positions: true,
    }), (r) => `Export ready (${r.file_size_bytes} bytes).`);
    if (answer) {
      // The link carries its own short-lived token: the browser downloads it directly.
      const link = h('a', { href: answer.download_url, download: '', id: 'export-link' });
      document.body.append(link);
      link.click();
      link.remove();
    }
  });

  const results = h('div', { id: 'history', 'data-state': 'loading' });
  page.append(
    h('div', { class: 'page-head' }, h('h1', {}, 'History'), h('div', { class: 'inline-form' }, format, exportButton)),
    card('Filters', form),
    card('Trades', results));

  const columns = [
    { label: 'Symbol', value: (t) => h('a', { href: `#/chart/${encodeURIComponent(t.symbol)}` }, t.symbol) },
    { label: 'Side', value: (t) => t.side },
    { label: 'Status', value: (t) => t.status || (t.closed_at ? 'closed' : 'open') },
    { label: 'Quantity', numeric: true, value: (t) => qty(t.quantity) },
    { label: 'Size', numeric: true, value: (t) => money(t.size_usd) },
    { label: 'Entry', numeric: true, value: (t) => px(t.entry_price) },
    { label: 'Exit', numeric: true, value: (t) => px(t.exit_price) },
    { label: 'P&L', numeric: true, class: (t) => tone(t.realized_pnl), value: (t) => (t.realized_pnl === null || t.realized_pnl === undefined ? '—' : `${pnl(t.realized_pnl)} (${pct(t.realized_pnl_pct)})`) },
    { label: 'Fees', numeric: true, value: (t) => money(t.fees) },
    { label: 'Opened', value: (t) => when(t.opened_at) },
    { label: 'Closed', value: (t) => when(t.closed_at) },
    { label: 'Held', value: (t) => (t.duration_minutes === null || t.duration_minutes === undefined ? '—' : duration(t.duration_minutes * 60)) },
    { label: 'Exit reason', value: (t) => (t.exit_reason || '—').replace(/_/g, ' ') },
  ];

  async function load() {
    results.dataset.state = 'loading';
    try {
      const data = await get(`/account/history${query({ ...filters, per_page: PER_PAGE })}`);
      fill(results,
        table(columns, data.trades, {
          id: 'history-table',
          key: (t) => t.trade_id,
          empty: filters.symbol || filters.status || filters.start_date || filters.end_date
            ? 'No trades match these filters.'
            : 'No trades yet. Your bot\'s trades are listed here once it has traded.',
        }),
        pager(data.pagination, (number) => `#/history${query({ ...filters, page: number })}`, 'records', ['← Newer', 'Older →']));
      results.dataset.state = 'ready';
      results.dataset.count = String(data.trades.length);
    } catch (error) {
      results.dataset.state = 'error';
      fill(results, h('p', { class: 'error-text' }, error.message));
    }
  }

  ctx.live('trade_executed', ctx.refresher(load, 1500));
  load();
}
