// One user for the operator: account, subscription, trading figures and brokers; changes of
// tier, status and notes (suspending or disabling is confirmed first: it ends the user's
// sessions and stops their bot); and the user's reconciliation with their broker when it has
// anything to show.

import { get, put } from '../../api.js';
import { act, card, confirmDialog, field, fill, h, stat, table, toast } from '../../dom.js';
import { pnl, ratio, tone, when } from '../../format.js';
import { ACCOUNT_STATUSES, TIERS, accountBadge, loadInto, options } from './common.js';

export function render(page, ctx, userId) {
  const path = `/admin/users/${encodeURIComponent(userId)}`;
  const title = h('h1', { id: 'admin-user-email' }, 'User');
  const details = h('div', { id: 'admin-user', 'data-state': 'loading' });
  const reconciliation = h('div', { id: 'admin-user-reconciliation', 'data-state': 'loading' });
  page.append(
    h('div', { class: 'page-head' }, title, h('div', { class: 'actions' },
      h('a', { href: `#/admin/audit?user_id=${encodeURIComponent(userId)}`, class: 'button', id: 'admin-user-audit' }, 'Audit log'),
      h('a', { href: '#/admin/users', class: 'button' }, '← All users'))),
    details,
    reconciliation);

  function load() {
    return loadInto(details, async () => {
      const { user } = await get(path);
      fill(title, user.email);
      fill(details, overview(user), manageForm(user));
    });
  }

  function overview(user) {
    const sub = user.subscription;
    const trialing = sub.status === 'trialing';
    return [
      card('Account', h('div', { class: 'stats' },
        stat('Name', user.full_name || '—'),
        stat('Role', user.role, { id: 'admin-user-role' }),
        stat('Status', accountBadge(user.status), { id: 'admin-user-status' }),
        stat('Joined', when(user.joined_at)),
        stat('Last active', when(user.last_active)),
        stat('User id', h('code', { class: 'user-id' }, user.user_id)))),
      card('Subscription', h('div', { class: 'stats' },
        stat('Tier', sub.tier, { id: 'admin-user-tier' }),
        stat('Limits of', sub.effective_tier, { id: 'admin-user-effective-tier' }),
        stat('Status', trialing ? 'trial' : sub.status),
        stat('Since', when(sub.started)),
        stat(trialing ? 'Trial ends' : 'Renews', when(sub.renews)))),
      card('Trading', h('div', { class: 'stats' },
        stat('Bot', h('span', { class: `badge status-${user.trading.bot_status}` }, user.trading.bot_status), { id: 'admin-user-bot' }),
        stat('Trades', String(user.trading.total_trades)),
        stat('Net P&L', pnl(user.trading.total_pnl), { tone: tone(user.trading.total_pnl) }),
        stat('Win rate', ratio(user.trading.win_rate)),
        stat('Open positions', String(user.trading.active_positions)))),
      card('Brokers', table([
        { label: 'Broker', value: (b) => b.name },
        { label: 'Status', value: (b) => h('span', { class: `badge status-${b.status}` }, b.status) },
      ], user.brokers, { id: 'admin-user-brokers', empty: 'This user has connected no broker yet.' })),
    ];
  }

  function manageForm(user) {
    const tier = h('select', { id: 'admin-user-tier-input', name: 'subscription_tier' }, options(TIERS, user.subscription.tier));
    const status = h('select', { id: 'admin-user-status-input', name: 'status' }, options(ACCOUNT_STATUSES, user.status));
    const notes = h('textarea', { id: 'admin-user-notes', name: 'notes', rows: 3, maxlength: 10000 });
    notes.value = user.notes || '';
    const save = h('button', { type: 'submit', class: 'primary', id: 'admin-user-save' }, 'Save changes');
    const form = h('form', { class: 'grid-form hinted-form', id: 'admin-user-form' },
      field('Tier', tier, 'Set outright; it ends a running trial.'),
      field('Status', status, 'Suspended and disabled users are signed out and their bot stops; positions stay open.'),
      h('div', { class: 'field wide' }, h('label', { for: notes.id }, 'Notes (operators only)'), notes),
      h('div', { class: 'actions' }, save));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      // Only what changed, so that the audit log records just that.
      const change = {};
      if (tier.value !== user.subscription.tier) change.subscription_tier = tier.value;
      if (status.value !== user.status) change.status = status.value;
      if (notes.value !== (user.notes || '')) change.notes = notes.value;
      if (!Object.keys(change).length) {
        toast('Nothing to save: tier, status and notes are as they were.', 'info');
        return;
      }
      const locking = change.status && change.status !== 'active';
      if (locking && !(await confirmDialog(`${change.status === 'suspended' ? 'Suspend' : 'Disable'} ${user.email}`,
        'The user is signed out everywhere at once and cannot sign in; their bot stops (open positions stay open).',
        { confirm: change.status === 'suspended' ? 'Suspend' : 'Disable', danger: true }))) return;
      const answer = await act(save, () => put(path, change), (r) => [
        r.message,
        r.sessions_revoked ? `${r.sessions_revoked} session(s) ended.` : '',
        r.bot_stopped ? 'Their bot was stopped.' : '',
      ].filter(Boolean).join(' '));
      if (answer) load();
    });
    return card('Manage', form);
  }

  const discrepancyColumns = [
    { label: 'Broker', value: (d) => d.broker },
    { label: 'Kind', value: (d) => d.kind.replace(/_/g, ' ') },
    { label: 'Asset / order', value: (d) => d.symbol || d.order_id || '—' },
    { label: 'Books', numeric: true, value: (d) => d.expected ?? '—' },
    { label: 'Broker says', numeric: true, value: (d) => d.actual ?? '—' },
    { label: 'Detail', class: () => 'wrap', value: (d) => d.detail },
    { label: 'Found', value: (d) => when(d.found_at) },
    { label: 'Resolution', value: (d) => (d.resolution ? `${d.resolution.replace(/_/g, ' ')} · ${when(d.resolved_at)}` : d.status) },
  ];

  // Read-only: shown only when the books and the broker have differed.
  function loadReconciliation() {
    return loadInto(reconciliation, async () => {
      const state = await get(`${path}/reconciliation`);
      reconciliation.dataset.inSync = String(state.in_sync);
      // `recent` lists the open ones too.
      const openIds = new Set(state.open.map((d) => d.discrepancy_id));
      const resolved = state.recent.filter((d) => !openIds.has(d.discrepancy_id));
      if (!state.open.length && !resolved.length) {
        fill(reconciliation);
        return 0;
      }
      fill(reconciliation, card('Reconciliation',
        h('p', {}, state.in_sync
          ? h('span', { class: 'badge status-ok' }, 'in sync')
          : h('span', { class: 'badge status-error' }, `${state.open.length} open`),
        ` · ${state.live_orders} order(s) being followed up. `,
        state.in_sync ? '' : 'The bot cannot start until the user (or an operator through the API) resolves these.'),
        state.open.length ? [h('h3', {}, 'Open'), table(discrepancyColumns, state.open, { id: 'admin-discrepancies-open', key: (d) => d.discrepancy_id })] : null,
        resolved.length ? [h('h3', {}, 'Resolved recently'), table(discrepancyColumns, resolved, { id: 'admin-discrepancies-resolved', key: (d) => d.discrepancy_id })] : null));
      return state.open.length;
    });
  }

  // The reconciliation of a user that exists (an unknown id says so once).
  load().then((found) => (found ? loadReconciliation() : reconciliation.remove()));
}
