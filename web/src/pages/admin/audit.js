// The audit log: filters (event type, user, dates), pages, newest first. Metadata is shown as
// JSON text, never interpreted.

import { get, query } from '../../api.js';
import { card, field, fill, h, pager, table } from '../../dom.js';
import { when } from '../../format.js';
import { loadInto, pageNumber, userLink } from './common.js';

const PER_PAGE = 50;
const FILTERS = ['event_type', 'user_id', 'start_date', 'end_date'];

// Suggestions for the event type filter (it matches exactly); any other type can be typed.
const EVENT_TYPES = [
  'auth.login_succeeded', 'auth.login_failed', 'auth.login_throttled', 'auth.login_locked', 'auth.logout',
  'auth.refresh_token_reused', 'auth.password_changed', 'auth.password_change_failed',
  'auth.password_reset_requested', 'auth.password_reset_completed', 'user.registered',
  'admin.created', 'admin.promoted', 'admin.user_updated', 'admin.kill_switch_activated',
  'admin.kill_switch_deactivated', 'plugin.uploaded', 'plugin.upload_refused', 'plugin.activated',
  'plugin.rolled_back', 'plugin.configured', 'broker.connected', 'broker.removed',
  'trading.reconciliation_mismatch', 'trading.reconciliation_resolved', 'subscription.upgraded',
  'subscription.renewed', 'subscription.cancelled', 'subscription.ended', 'billing.provider_event',
  'webhook_key.rotated',
];

export function render(page, ctx) {
  const search = ctx.params.search;
  const filters = Object.fromEntries(FILTERS.map((name) => [name, search.get(name) || '']));
  const current = pageNumber(search);

  const inputs = {
    event_type: h('input', { id: 'audit-event-type', list: 'audit-event-types', value: filters.event_type, placeholder: 'all events', autocomplete: 'off' }),
    user_id: h('input', { id: 'audit-user-id', value: filters.user_id, placeholder: 'all users', autocomplete: 'off' }),
    start_date: h('input', { id: 'audit-from', type: 'date', value: filters.start_date }),
    end_date: h('input', { id: 'audit-to', type: 'date', value: filters.end_date }),
  };
  const form = h('form', { class: 'grid-form filters', id: 'audit-filters' },
    field('Event type', inputs.event_type),
    h('datalist', { id: 'audit-event-types' }, EVENT_TYPES.map((type) => h('option', { value: type }))),
    field('User id', inputs.user_id), field('From', inputs.start_date), field('To (inclusive)', inputs.end_date),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Filter')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = Object.fromEntries(FILTERS.map((name) => [name, inputs[name].value.trim()]));
    ctx.navigate(`admin/audit${query(next)}`);
  });

  const results = h('div', { id: 'admin-audit', 'data-state': 'loading' });
  page.append(h('h1', {}, 'Audit log'), card('Filters', form), card('Events', results));

  const columns = [
    { label: 'Time', value: (e) => when(e.timestamp) },
    { label: 'Event', value: (e) => h('a', { href: `#/admin/audit${query({ ...filters, event_type: e.event_type })}` }, e.event_type) },
    { label: 'User', value: (e) => (e.user_id ? userLink(e.user_id, `${e.user_id.slice(0, 8)}…`) : '—') },
    { label: 'Client', value: (e) => h('span', { title: e.user_agent || null }, e.ip_address || '—') },
    { label: 'Details', class: () => 'meta', value: metadata },
  ];

  loadInto(results, async () => {
    const data = await get(`/admin/audit-logs${query({ ...filters, page: current, per_page: PER_PAGE })}`);
    const filtered = FILTERS.some((name) => filters[name]);
    fill(results,
      table(columns, data.logs, {
        id: 'admin-audit-table',
        key: (e) => e.log_id,
        empty: filtered ? 'No events match these filters; widen the dates or clear a filter.' : 'No events on this page; go back to the first page.',
      }),
      pager(data.pagination, (number) => `#/admin/audit${query({ ...filters, page: number })}`, 'events'));
    return data.logs.length;
  });
}

// An event's metadata as JSON text on one line, spaced so that it wraps between values
// (JSON escapes line breaks inside strings, so every line break is formatting).
function metadata(entry) {
  const value = entry.metadata;
  if (value === null || (typeof value === 'object' && !Object.keys(value).length)) return '—';
  return h('code', { class: 'audit-meta' }, JSON.stringify(value, null, 1).replace(/\n\s*/g, ' '));
}
