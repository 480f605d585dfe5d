// Users: search by e-mail or id, filter by tier and status, page through; each row links to
// the user's page. Filters and page live in the hash query, so a view can be linked to.

import { get, query } from '../../api.js';
import { card, field, fill, h, pager, table } from '../../dom.js';
import { pnl, tone, when } from '../../format.js';
import { ACCOUNT_STATUSES, TIERS, accountBadge, loadInto, options, pageNumber, userLink } from './common.js';

const PER_PAGE = 25;

export function render(page, ctx) {
  const search = ctx.params.search;
  const filters = {
    search: search.get('search') || '',
    tier: search.get('tier') || '',
    status: search.get('status') || '',
  };
  const current = pageNumber(search);

  const text = h('input', { id: 'users-search', name: 'search', type: 'search', value: filters.search, placeholder: 'e-mail or user id' });
  const tier = h('select', { id: 'users-tier', name: 'tier' }, options(TIERS, filters.tier, 'all'));
  const status = h('select', { id: 'users-status', name: 'status' }, options(ACCOUNT_STATUSES, filters.status, 'all'));
  const form = h('form', { class: 'grid-form filters', id: 'users-filters' },
    field('Search', text), field('Tier', tier), field('Status', status),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Filter')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.navigate(`admin/users${query({ search: text.value.trim(), tier: tier.value, status: status.value })}`);
  });

  const results = h('div', { id: 'admin-users', 'data-state': 'loading' });
  page.append(h('h1', {}, 'Users'), card('Filters', form), card('Users', results));

  const columns = [
    { label: 'E-mail', value: (u) => userLink(u.user_id, u.email) },
    { label: 'Name', value: (u) => u.full_name },
    { label: 'Tier', value: (u) => h('span', { class: 'badge' }, u.subscription_tier) },
    { label: 'Status', value: (u) => accountBadge(u.status) },
    { label: 'Trades', numeric: true, value: (u) => String(u.total_trades) },
    { label: 'P&L', numeric: true, class: (u) => tone(u.total_pnl), value: (u) => pnl(u.total_pnl) },
    { label: 'Joined', value: (u) => when(u.joined_at) },
    { label: 'Last active', value: (u) => when(u.last_active) },
  ];

  loadInto(results, async () => {
    const data = await get(`/admin/users${query({ ...filters, page: current, per_page: PER_PAGE })}`);
    const filtered = filters.search || filters.tier || filters.status;
    fill(results,
      table(columns, data.users, {
        id: 'admin-users-table',
        key: (u) => u.user_id,
        empty: filtered
          ? 'No user matches these filters; widen the search or set tier and status to "all".'
          : 'No users on this page; go back to the first page.',
      }),
      pager(data.pagination, (number) => `#/admin/users${query({ ...filters, page: number })}`, 'users'));
    return data.users.length;
  });
}
