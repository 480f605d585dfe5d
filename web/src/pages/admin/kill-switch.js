// The kill switch card: whether trading is halted platform-wide, activation (reason, whether to
// close every position, whether to mail users) and lifting, each confirmed first.

import { del, get, post } from '../../api.js';
import { act, card, confirmDialog, field, fill, h, stat, toast } from '../../dom.js';
import { when } from '../../format.js';
import { loadInto, userLink } from './common.js';

export function killSwitchCard(ctx) {
  const box = h('div', { class: 'kill-switch', id: 'kill-switch', 'data-state': 'loading' });
  // What the last activation from this page did; kept across reloads of the state.
  const outcome = h('div', { id: 'kill-switch-outcome' });

  function load() {
    return loadInto(box, async () => {
      const state = await get('/admin/kill-switch');
      box.dataset.active = String(state.active);
      fill(box, state.active ? await activeView(state) : idleView());
    });
  }

  async function activeView(state) {
    // The state names the operator by id; their e-mail reads better.
    const email = state.activated_by
      ? await get(`/admin/users/${encodeURIComponent(state.activated_by)}`).then((d) => d.user.email, () => null)
      : null;
    const lift = h('button', { type: 'button', class: 'primary', id: 'kill-switch-lift' }, 'Lift the kill switch');
    lift.addEventListener('click', async () => {
      if (!(await confirmDialog('Lift the kill switch', 'Users may start their bots again. Bots stopped by the kill switch stay stopped until their users start them.', { confirm: 'Lift' }))) return;
      if (await act(lift, () => del('/admin/kill-switch'), 'The kill switch is lifted; users may start their bots again.')) {
        fill(outcome);
        load();
      }
    });
    return [
      h('p', {}, h('span', { class: 'badge status-error', id: 'kill-switch-status' }, 'active'), ' Trading is halted for every user: ',
        h('strong', { id: 'kill-switch-reason' }, state.reason || 'no reason given')),
      h('div', { class: 'stats' },
        stat('Activated by', state.activated_by ? userLink(state.activated_by, email || state.activated_by) : '—'),
        stat('Since', when(state.activated_at))),
      outcome,
      h('div', { class: 'actions' }, lift),
    ];
  }

  function idleView() {
    const activate = h('button', { type: 'button', class: 'danger', id: 'kill-switch-activate' }, 'Activate the kill switch…');
    activate.addEventListener('click', () => confirmActivation(activate));
    return [
      h('p', {}, h('span', { class: 'badge status-ok', id: 'kill-switch-status' }, 'off'), ' Users may trade. The kill switch stops every bot at once and refuses new starts until it is lifted.'),
      outcome,
      h('div', { class: 'actions' }, activate),
    ];
  }

  async function confirmActivation(button) {
    const reason = h('input', { id: 'kill-reason', maxlength: 500, placeholder: 'e.g. Exchange incident', required: true });
    const closeAll = h('input', { type: 'checkbox', id: 'kill-close-all' });
    const notify = h('input', { type: 'checkbox', id: 'kill-notify', checked: true });
    const extra = h('div', {},
      field('Reason', reason, 'Users see it with the halt.'),
      h('div', { class: 'check' }, closeAll, h('label', { for: 'kill-close-all' }, 'Also close every open position at the market')),
      h('div', { class: 'check' }, notify, h('label', { for: 'kill-notify' }, 'Tell users by e-mail and webhook (connected users are always told live)')));
    const confirmed = await confirmDialog('Activate the kill switch',
      'Every running bot of every user stops now, and no bot can start until you lift it.',
      { confirm: 'Stop all trading', danger: true, extra });
    if (!confirmed) return;
    const answer = await act(button, () => post('/admin/kill-switch', {
      reason: reason.value.trim() || undefined,
      close_all_positions: closeAll.checked,
      notify_users: notify.checked,
    }));
    if (!answer) return;
    toast(answer.message || 'The kill switch is active.', answer.failures.length ? 'error' : 'success');
    showOutcome(answer);
    load();
  }

  function showOutcome(answer) {
    fill(outcome,
      h('h3', {}, 'What the activation did'),
      h('div', { class: 'stats' },
        stat('Users whose bots stopped', String(answer.affected_users), { id: 'kill-affected-users' }),
        stat('Positions closed', String(answer.positions_closed), { id: 'kill-positions-closed' }),
        stat('Positions still open', String(answer.active_positions), { id: 'kill-active-positions' })),
      answer.failures.length
        ? h('ul', { class: 'alarms', id: 'kill-failures' }, answer.failures.map((f) => h('li', { class: 'alarm level-critical' },
          userLink(f.user_id), ': ', f.error)))
        : null);
  }

  // Another operator (or this one in another tab) may switch it.
  ctx.live('kill_switch', ctx.refresher(load, 300));
  load();
  return card('Kill switch', box);
}
