// The raw ledger: every fill the engine booked (opens and closes), newest first, filtered by
// pair, and the ledger's tables exported as CSV or as a PDF report.

import { companion, download, query } from '../api.js';
import { act, card, field, fill, h, table } from '../dom.js';
import { money, px, qty } from '../format.js';

const LIMITS = [100, 250, 500, 1000];
const TABLES = [
  ['trade_ledger', 'Ledger (every fill)'],
  ['completed_trades', 'Completed trades'],
  ['open_positions', 'Open positions'],
];

// Fills of one order come seconds apart: the ledger shows the seconds.
const exactly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const at = (iso) => (iso ? exactly.format(new Date(iso)) : '—');

// A long id, shortened for the table; the whole id shows on hover.
const shortId = (id) => (id ? h('code', { title: id }, id.slice(0, 8)) : '—');

export function render(page, ctx) {
  const search = ctx.params.search;
  const symbol = (search.get('symbol') || '').toUpperCase();
  const limit = LIMITS.includes(Number(search.get('limit'))) ? Number(search.get('limit')) : LIMITS[0];

  const symbolInput = h('input', { id: 'ledger-symbol', name: 'symbol', value: symbol, placeholder: 'all pairs, or e.g. ETH-USD', size: 12, autocapitalize: 'characters' });
  const limitSelect = h('select', { id: 'ledger-limit', name: 'limit' },
    LIMITS.map((n) => h('option', { value: n, selected: n === limit }, `latest ${n}`)));
  const filters = h('form', { class: 'grid-form filters', id: 'ledger-filters' },
    field('Pair', symbolInput),
    field('Rows', limitSelect),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Show')));
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.navigate(`ledger${query({ symbol: symbolInput.value.trim().toUpperCase(), limit: limitSelect.value })}`);
  });
  limitSelect.addEventListener('change', () => filters.requestSubmit());

  const tableSelect = h('select', { id: 'export-table', 'aria-label': 'Table to export' },
    TABLES.map(([value, label]) => h('option', { value }, label)));
  const exportButton = (format, label) => {
    const button = h('button', { type: 'button', id: `export-${format}` }, label);
    button.addEventListener('click', () => act(button,
      () => download(`/api/trades/export${query({ format, table: tableSelect.value })}`, `tradehost_${tableSelect.value}.${format}`),
      (file) => `Saved ${file.filename} (${(file.size / 1024).toFixed(1)} KB).`));
    return button;
  };
  const exports = h('div', { class: 'inline-form', id: 'ledger-export' },
    tableSelect, exportButton('csv', 'Export CSV'), exportButton('pdf', 'Export PDF'));

  const results = h('div', { id: 'ledger', 'data-state': 'loading' });
  page.append(
    h('div', { class: 'page-head' }, h('h1', {}, 'Ledger'), exports),
    h('p', { class: 'hint' }, 'Exports hold the whole table of your account, whatever the pair shown below; the PDF adds the trade statistics.'),
    card('Filter', filters),
    card('Fills', results));

  const columns = [
    { label: 'Time', value: (r) => at(r.timestamp) },
    { label: 'Pair', value: (r) => h('a', { href: `#/chart/${encodeURIComponent(r.symbol)}` }, r.symbol) },
    { label: 'Side', value: (r) => r.side },
    { label: 'Action', value: (r) => h('span', { class: 'badge' }, r.action) },
    { label: 'Price', numeric: true, value: (r) => px(r.price) },
    { label: 'Quantity', numeric: true, value: (r) => qty(r.quantity) },
    { label: 'Value', numeric: true, value: (r) => money(r.size_usd) },
    { label: 'Fee', numeric: true, value: (r) => money(r.fee) },
    { label: 'Order', value: (r) => shortId(r.order_id) },
    { label: 'Position', value: (r) => shortId(r.position_id) },
  ];

  async function load() {
    try {
      const data = await companion(`/api/trades/ledger${query({ symbol, limit })}`);
      const rows = data.transactions;
      fill(results,
        table(columns, rows, {
          id: 'ledger-table',
          key: (r) => r.id,
          empty: symbol
            ? `No fills for ${symbol}. Check the pair, or clear the filter to see every pair.`
            : 'No fills yet. Every order the bot fills is booked here; start your bot to trade.',
        }),
        // The route returns at most `limit` rows and no total: a full page may have older ones.
        rows.length >= limit
          ? h('p', { class: 'hint', id: 'ledger-more' }, `Showing the latest ${limit} fills; the export holds every one.`)
          : null);
      results.dataset.state = 'ready';
      results.dataset.count = String(rows.length);
    } catch (error) {
      results.dataset.state = 'error';
      fill(results, h('p', { class: 'error-text' }, error.message));
    }
  }

  ctx.live('trade_executed', ctx.refresher(load, 1500));
  load();
}
