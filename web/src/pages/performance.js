// Performance over a period (7 days to all time): every figure of the period, the equity,
// drawdown and daily P&L charts, results by pair with the best and worst trade, and the
// account's all-time statistics. Reloads when a trade completes.

import { get, query } from '../api.js';
import { card, fill, h, stat, table } from '../dom.js';
import { duration, money, pct, pnl, ratio, tone, when } from '../format.js';
import { performanceCharts } from './performance-charts.js';

const PERIODS = [['7d', '7 days'], ['30d', '30 days'], ['90d', '90 days'], ['1y', '1 year'], ['all', 'All time']];

const count = (value) => String(value ?? '—');
const decimal = (value) => (value === null || value === undefined ? '—' : Number(value).toFixed(2));
const days = (value) => duration(Number(value) * 86400);
const minutes = (value) => duration(Number(value) * 60);
// The API reports 999.99 for wins without a single loss.
const profitFactor = (value) => (Number(value) >= 999.99 ? '∞ (no losses)' : decimal(value));

// A streak's type (`none` has no entry): singular, plural, colour.
const STREAKS = { win: ['win', 'wins', 'gain'], loss: ['loss', 'losses', 'loss'] };

// Every figure of `metrics`, in reading order: [field, label, format, coloured by sign].
const METRICS = [
  ['net_pnl', 'Net P&L', pnl, true],
  ['total_pnl_pct', 'Return on capital', pct, true],
  ['total_pnl', 'Gross P&L', pnl, true],
  ['total_fees', 'Fees', money, false],
  ['total_trades', 'Trades', count, false],
  ['winning_trades', 'Winners', count, false],
  ['losing_trades', 'Losers', count, false],
  ['win_rate', 'Win rate', ratio, false],
  ['avg_win', 'Average win', pnl, true],
  ['avg_loss', 'Average loss', pnl, true],
  ['largest_win', 'Largest win', pnl, true],
  ['largest_loss', 'Largest loss', pnl, true],
  ['profit_factor', 'Profit factor', profitFactor, false],
  ['sharpe_ratio', 'Sharpe ratio', decimal, false],
  ['max_drawdown', 'Max drawdown', money, true],
  ['max_drawdown_pct', 'Max drawdown %', pct, true],
  ['recovery_time_days', 'Recovery time', days, false],
  ['avg_trade_duration_minutes', 'Average hold', minutes, false],
];

export function render(page, ctx) {
  const wanted = ctx.params.search.get('period');
  const period = PERIODS.some(([value]) => value === wanted) ? wanted : '30d';

  const picker = h('nav', { class: 'segmented', id: 'performance-period', 'aria-label': 'Period' },
    PERIODS.map(([value, label]) => h('a', {
      href: `#/performance${query({ period: value })}`,
      class: 'button',
      'data-period': value,
      'aria-current': value === period ? 'true' : null,
    }, label)));
  const notice = h('div', { id: 'performance-notice' });
  const figures = h('div', { class: 'stats', id: 'performance-metrics', 'data-state': 'loading' });
  const charts = performanceCharts(ctx);
  const byPair = h('div', { id: 'performance-trades', 'data-state': 'loading' });
  const pairsCard = card('Results by pair', byPair);
  const account = h('div', { id: 'account-stats', 'data-state': 'loading' });
  page.append(
    h('div', { class: 'page-head' }, h('h1', {}, 'Performance'), picker),
    notice, figures, charts.element, pairsCard, card('All-time statistics', account));

  const failed = (box, error) => {
    box.dataset.state = 'error';
    fill(box, h('p', { class: 'error-text' }, error.message));
  };

  async function load() {
    const [performance, stats, trades] = await Promise.allSettled([
      get(`/account/performance${query({ period })}`),
      get('/account/stats'),
      get(`/analytics/trades${query({ period })}`),
    ]);
    if (stats.status === 'fulfilled') drawAccount(stats.value);
    else failed(account, stats.reason);
    if (performance.status === 'rejected') {
      failed(figures, performance.reason);
      return;
    }
    const { metrics } = performance.value;
    // Without stats, the period's own trades tell whether there were ever any.
    const everTraded = stats.status === 'fulfilled' ? stats.value.trading.total_trades_all_time > 0 : metrics.total_trades > 0;
    drawNotice(everTraded, metrics.total_trades);
    figures.hidden = !everTraded;
    pairsCard.hidden = !everTraded;
    if (!everTraded) {
      figures.dataset.state = 'empty';
      byPair.dataset.state = 'empty';
      return;
    }
    drawMetrics(metrics);
    charts.draw(performance.value);
    if (trades.status === 'fulfilled') drawTrades(trades.value);
    else failed(byPair, trades.reason);
  }

  function drawNotice(everTraded, periodTrades) {
    notice.dataset.state = !everTraded ? 'no-trades' : periodTrades ? 'none' : 'no-trades-in-period';
    if (!everTraded) {
      fill(notice, card('No trades yet',
        h('p', { class: 'empty', id: 'performance-empty' }, 'Performance is measured on completed trades. ',
          h('a', { href: '#/bot' }, 'Start your bot'), ' (on the paper broker to trade simulated money) and its results appear here.')));
    } else if (!periodTrades) {
      fill(notice, h('p', { class: 'empty', id: 'performance-empty' }, 'No trade was completed in this period. ',
        h('a', { href: '#/performance?period=all' }, 'See all time'), '.'));
    } else {
      fill(notice);
    }
  }

  function drawMetrics(metrics) {
    fill(figures, METRICS.map(([name, label, format, signed]) => stat(label, format(metrics[name]),
      { id: `metric-${name.replace(/_/g, '-')}`, tone: signed ? tone(metrics[name]) : null })));
    figures.dataset.state = 'ready';
  }

  const tradeRef = (label, t, id) => stat(label, t ? `${t.symbol} ${pnl(t.pnl)} (${pct(t.pnl_pct)})` : '—', { id, tone: t ? tone(t.pnl) : null });

  function drawTrades(data) {
    fill(byPair,
      h('div', { class: 'stats' },
        stat('Wins / losses', `${data.by_outcome.wins} / ${data.by_outcome.losses}`, { id: 'trades-outcome' }),
        stat('Win rate', ratio(data.by_outcome.win_rate)),
        stat('Average hold', minutes(data.avg_hold_time_minutes)),
        tradeRef('Best trade', data.best_trade, 'best-trade'),
        tradeRef('Worst trade', data.worst_trade, 'worst-trade')),
      table([
        { label: 'Pair', value: (s) => h('a', { href: `#/chart/${encodeURIComponent(s.symbol)}` }, s.symbol) },
        { label: 'Trades', numeric: true, value: (s) => String(s.trades) },
        { label: 'Net P&L', numeric: true, value: (s) => pnl(s.pnl), class: (s) => tone(s.pnl) },
      ], data.by_symbol, {
        id: 'by-symbol-table',
        key: (s) => s.symbol,
        empty: 'No trade was completed in this period.',
      }));
    byPair.dataset.state = 'ready';
    byPair.dataset.count = String(data.by_symbol.length);
  }

  function drawAccount({ account: a, trading: t, risk: r }) {
    const best = t.best_month;
    const streak = t.current_streak;
    const group = (title, ...stats) => h('div', {}, h('h3', {}, title), h('div', { class: 'stats' }, stats));
    fill(account,
      group('Balance',
        stat('Balance', money(a.current_balance), { id: 'account-balance' }),
        stat('Deposits', money(a.total_deposits)),
        stat('Withdrawals', money(a.total_withdrawals)),
        stat('All-time high', money(a.all_time_high)),
        stat('All-time low', money(a.all_time_low)),
        stat('Plan', a.subscription_tier),
        stat('Account age', `${a.account_age_days} d`)),
      group('Trading',
        stat('Trades', String(t.total_trades_all_time), { id: 'account-trades' }),
        stat('Volume', money(t.total_volume_usd)),
        stat('Fees paid', money(t.total_fees_paid)),
        stat('Best month', best ? `${best.month}: ${pnl(best.pnl)} (${pct(best.pnl_pct)})` : '—', { tone: best ? tone(best.pnl) : null }),
        stat('Current streak', STREAKS[streak.type] ? `${streak.count} ${STREAKS[streak.type][streak.count === 1 ? 0 : 1]}` : '—',
          { id: 'current-streak', tone: STREAKS[streak.type]?.[2] }),
        streak.started ? stat('Streak since', when(streak.started)) : null),
      group('Risk limits',
        stat('Risk level', r.current_risk_level),
        stat('Largest position', money(r.max_position_size_usd)),
        stat('Open positions allowed', String(r.max_positions)),
        stat('Leverage in use', `${decimal(r.current_leverage)}×`),
        stat('Leverage available', `${decimal(r.available_leverage)}×`),
        stat('Bot', h('span', { class: `badge status-${r.bot_status}` }, r.bot_status))));
    account.dataset.state = 'ready';
  }

  ctx.live('trade_executed', ctx.refresher(load, 1500));
  load();
}
