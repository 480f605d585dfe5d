// The trade view of one pair: its candles with the bot's entries and exits marked at their
// prices, the open position's entry, stop and target as lines, the position itself with a
// manual close, all updated live.

import { CandlestickSeries, LineStyle, createSeriesMarkers } from 'lightweight-charts';

import { get, query } from '../api.js';
import { attribution, colours, themedChart } from '../charts.js';
import { card, fill, h } from '../dom.js';
import { px } from '../format.js';
import { positionsPanel } from '../positions.js';

const INTERVALS = { '1m': 60, '5m': 300, '1h': 3600 };
const DEFAULT_SYMBOL = 'BTC-USD';

export function render(page, ctx) {
  const symbol = (ctx.params.rest[0] || '').toUpperCase() || null;
  if (!symbol) {
    pickDefault(ctx);
    return;
  }
  const interval = INTERVALS[ctx.params.search.get('interval')] ? ctx.params.search.get('interval') : '1m';
  const step = INTERVALS[interval];

  const symbolInput = h('input', { id: 'chart-symbol', value: symbol, 'aria-label': 'Pair', size: 12 });
  const intervalSelect = h('select', { id: 'chart-interval', 'aria-label': 'Interval' },
    Object.keys(INTERVALS).map((i) => h('option', { value: i, selected: i === interval }, i)));
  const go = h('button', { type: 'submit' }, 'Show');
  const picker = h('form', { class: 'inline-form', id: 'chart-picker' }, symbolInput, intervalSelect, go);
  picker.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = symbolInput.value.trim().toUpperCase() || DEFAULT_SYMBOL;
    ctx.navigate(`chart/${encodeURIComponent(next)}?interval=${intervalSelect.value}`);
  });
  intervalSelect.addEventListener('change', () => picker.requestSubmit());

  const box = h('div', { class: 'chart', id: 'chart', 'data-state': 'loading', 'data-symbol': symbol });
  const note = h('p', { class: 'muted', id: 'chart-note' });
  const positions = positionsPanel(ctx, { symbol, onChange: (rows) => { open = rows; drawLevels(); } });
  page.append(
    h('div', { class: 'page-head' }, h('h1', {}, symbol), picker),
    h('section', { class: 'card' }, box, note, attribution()),
    card('Position', positions.element),
  );

  let c = colours();
  const chart = themedChart(ctx, box, {}, (next) => {
    c = next;
    series.applyOptions({ upColor: c.gain, downColor: c.loss, wickUpColor: c.gain, wickDownColor: c.loss });
    drawMarkers();
    drawLevels();
  });
  const series = chart.addSeries(CandlestickSeries, {
    upColor: c.gain, downColor: c.loss, borderVisible: false, wickUpColor: c.gain, wickDownColor: c.loss,
  });
  const markers = createSeriesMarkers(series, []);

  let bars = [];
  let trades = [];
  let open = [];
  let lines = [];

  const barTime = (iso) => Math.floor(new Date(iso).getTime() / 1000 / step) * step;

  function drawMarkers() {
    const list = [];
    const first = bars.length ? bars[0].time : Infinity;
    for (const t of trades) {
      const long = t.side === 'long';
      if (t.opened_at && barTime(t.opened_at) >= first) {
        list.push({
          time: barTime(t.opened_at), position: long ? 'atPriceBottom' : 'atPriceTop', price: Number(t.entry_price),
          shape: long ? 'arrowUp' : 'arrowDown', color: c.accent, text: long ? 'Buy' : 'Sell', id: `entry-${t.trade_id}`,
        });
      }
      if (t.closed_at && t.exit_price !== null && t.exit_price !== undefined && barTime(t.closed_at) >= first) {
        list.push({
          time: barTime(t.closed_at), position: long ? 'atPriceTop' : 'atPriceBottom', price: Number(t.exit_price),
          shape: long ? 'arrowDown' : 'arrowUp', color: Number(t.realized_pnl) >= 0 ? c.gain : c.loss,
          text: `Exit (${(t.exit_reason || '').replace(/_/g, ' ')})`, id: `exit-${t.trade_id}`,
        });
      }
    }
    list.sort((a, b) => a.time - b.time);
    markers.setMarkers(list);
    box.dataset.markers = String(list.length);
    box.dataset.entries = list.filter((m) => m.id.startsWith('entry-')).map((m) => m.id.slice(6)).join(' ');
    box.dataset.exits = list.filter((m) => m.id.startsWith('exit-')).map((m) => m.id.slice(5)).join(' ');
  }

  function drawLevels() {
    for (const line of lines) series.removePriceLine(line);
    lines = [];
    for (const p of open) {
      const add = (price, title, color, style) => {
        if (price === null || price === undefined) return;
        lines.push(series.createPriceLine({ price: Number(price), color, lineWidth: 1, lineStyle: style, axisLabelVisible: true, title }));
      };
      add(p.entry_price, 'Entry', c.accent, LineStyle.Solid);
      add(p.stop_loss, 'Stop', c.loss, LineStyle.Dashed);
      add(p.take_profit, 'Target', c.gain, LineStyle.Dashed);
    }
    box.dataset.lines = String(lines.length);
  }

  async function loadCandles() {
    try {
      const data = await get(`/market/candles${query({ symbol, interval, limit: 300 })}`);
      bars = data.candles;
      series.setData(bars);
      box.dataset.bars = String(bars.length);
      box.dataset.state = 'ready';
      fill(note, bars.length ? '' : 'The broker has no candles for this pair yet.');
      drawMarkers();
    } catch (error) {
      box.dataset.state = 'error';
      fill(note, h('span', { class: 'error-text' }, error.message));
    }
  }

  async function loadTrades() {
    try {
      const data = await get(`/account/history${query({ symbol, per_page: 100 })}`);
      trades = data.trades;
      drawMarkers();
    } catch (error) {
      fill(note, h('span', { class: 'error-text' }, error.message));
    }
  }

  // The forming bar follows the position's live price.
  ctx.live('position_update', (update) => {
    if (update.symbol !== symbol || !bars.length || !update.current_price) return;
    const price = Number(update.current_price);
    const time = Math.floor(Date.now() / 1000 / step) * step;
    const last = bars[bars.length - 1];
    if (time < last.time) return;
    const bar = time === last.time
      ? { ...last, high: Math.max(last.high, price), low: Math.min(last.low, price), close: price }
      : { time, open: last.close, high: Math.max(last.close, price), low: Math.min(last.close, price), close: price };
    if (time === last.time) bars[bars.length - 1] = bar;
    else bars.push(bar);
    series.update(bar);
  });
  const tradesSoon = ctx.refresher(loadTrades, 300);
  ctx.live('trade_executed', (trade) => {
    if (trade.symbol === symbol) tradesSoon();
  });
  ctx.every(step * 1000, ctx.refresher(loadCandles, 0));

  loadCandles().then(loadTrades);
}

// Without a pair in the address: the first open position's, else the bot's first pair.
async function pickDefault(ctx) {
  let symbol = DEFAULT_SYMBOL;
  try {
    const positions = await get('/account/positions');
    const status = positions.positions.length ? null : await get('/trading/status');
    symbol = positions.positions[0]?.symbol || status?.symbols?.[0] || DEFAULT_SYMBOL;
  } catch (_) {
    // the default pair
  }
  window.history.replaceState(null, '', `/#/chart/${encodeURIComponent(symbol)}`);
  window.dispatchEvent(new HashChangeEvent('hashchange'));
}
