// The operator's overview: the kill switch, platform figures and every user's active alarms.
// Alarms arrive live only for their own user, so this page refreshes every 30 s and on request.

import { get } from '../../api.js';
import { act, card, fill, h, stat, table } from '../../dom.js';
import { duration, money, qty, ratio, when } from '../../format.js';
import { killSwitchCard } from './kill-switch.js';
import { levelBadge, loadInto, userLink } from './common.js';

const REFRESH_MS = 30000;
const count = (value) => String(value);

export function render(page, ctx) {
  const metrics = h('div', { class: 'admin-metrics', id: 'admin-metrics', 'data-state': 'loading' });
  const alarms = h('div', { id: 'admin-alarms', 'data-state': 'loading' });
  const refresh = h('button', { type: 'button', id: 'admin-refresh' }, 'Refresh');
  refresh.addEventListener('click', () => act(refresh, async () => {
    const loaded = await Promise.all([loadMetrics(), loadAlarms()]);
    if (!loaded.every(Boolean)) throw new Error('Part of the overview could not be loaded; the page says which.');
  }, 'Figures and alarms refreshed.'));

  page.append(
    h('div', { class: 'page-head' }, h('h1', {}, 'Overview'), refresh),
    killSwitchCard(ctx),
    metrics,
    card('Active alarms', alarms));

  function loadMetrics() {
    return loadInto(metrics, async () => {
      const m = await get('/admin/metrics');
      const group = (title, ...stats) => card(title, h('div', { class: 'stats' }, stats));
      fill(metrics,
        group('Users',
          stat('Total', count(m.users.total), { id: 'metric-users-total' }),
          stat('Active in 24 h', count(m.users.active_today)),
          stat('Free', count(m.users.free)),
          stat('Basic', count(m.users.basic)),
          stat('Pro', count(m.users.pro)),
          stat('Enterprise', count(m.users.enterprise))),
        group('Trading',
          stat('Bots running', count(m.trading.bots_running), { id: 'metric-bots-running' }),
          stat('Open positions', count(m.trading.total_positions)),
          stat('Volume 24 h', money(m.trading.total_volume_24h)),
          stat('Trades 24 h', count(m.trading.total_trades_24h)),
          stat('Scans since start', count(m.trading.bot_scans_total))),
        group('System (last minute)',
          stat('Requests / s', m.system.api_requests_per_second.toFixed(2)),
          stat('Avg response', `${m.system.avg_response_time_ms.toFixed(1)} ms`),
          stat('Error rate (5xx)', ratio(m.system.error_rate)),
          stat('Uptime', ratio(m.system.uptime_pct / 100)),
          stat('Up for', duration(m.system.uptime_seconds)),
          stat('Live connections', count(m.system.websocket_users))),
        group('Revenue',
          stat('MRR', money(m.revenue.mrr), { id: 'metric-mrr' }),
          stat('ARR', money(m.revenue.arr)),
          stat('Churn (30 d)', ratio(m.revenue.churn_rate))));
    });
  }

  const alarmColumns = [
    { label: 'User', value: (a) => userLink(a.user_id, a.email) },
    { label: 'Level', value: (a) => levelBadge(a.level) },
    { label: 'Type', value: (a) => a.alarm_type },
    { label: 'Message', class: () => 'wrap', value: (a) => h('span', { title: a.recommended_action || null }, a.message) },
    { label: 'Value / threshold', numeric: true, value: (a) => `${qty(a.current_value)} / ${qty(a.threshold_value)}` },
    { label: 'Raised', value: (a) => when(a.raised_at) },
  ];

  function loadAlarms() {
    return loadInto(alarms, async () => {
      const data = await get('/admin/alarms');
      fill(alarms,
        table(alarmColumns, data.alarms, {
          id: 'admin-alarms-table',
          key: (a) => a.alarm_id,
          empty: 'No active alarms: every user\'s risk figures are within their thresholds.',
        }),
        data.truncated ? h('p', { class: 'hint' }, `Showing the newest ${data.count} alarms; there are more.`) : null);
      return data.alarms.length;
    });
  }

  const soon = ctx.refresher(() => {
    loadMetrics();
    loadAlarms();
  }, 0);
  ctx.every(REFRESH_MS, soon);
  // The kill switch stops bots: the figures change with it.
  ctx.live('kill_switch', soon);
  loadMetrics();
  loadAlarms();
}
