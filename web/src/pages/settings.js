// Settings: trading limits and mail notifications (only what changed is sent), notification
// webhooks, the webhook key for signals, and the password.

import { get, put } from '../api.js';
import { act, card, field, fill, h, toast } from '../dom.js';
import { webhooksCard } from './settings-webhooks.js';
import { signalKeyCard } from './settings-signals.js';

const RISK_LEVELS = [['low', 'Low'], ['medium', 'Medium'], ['high', 'High']];
const NOTIFICATIONS = [
  ['email_enabled', 'Send me mail', 'Off: no mail at all, whatever is ticked below.'],
  ['trade_notifications', 'A mail for each trade opened and closed'],
  ['daily_summary', 'Daily summary'],
  ['weekly_report', 'Weekly report (Mondays)'],
  ['push_enabled', 'Push notifications'],
];

// What a control holds, as the API takes it.
function valueOf(control) {
  if (control.type === 'checkbox') return control.checked;
  if (control.type === 'number') return Number(control.value);
  if (control.dataset.list !== undefined) return control.value.split(',').map((s) => s.trim().toUpperCase()).filter(Boolean);
  return control.value;
}

// The fields of one section whose controls differ from the loaded values.
function changes(controls, loaded) {
  const changed = {};
  for (const [name, control] of Object.entries(controls)) {
    const value = valueOf(control);
    if (JSON.stringify(value) !== JSON.stringify(loaded[name])) changed[name] = value;
  }
  return changed;
}

const check = (control, label, hint) => h('div', { class: 'check' }, control, h('label', { for: control.id }, label),
  hint ? h('small', { class: 'hint' }, hint) : null);

export function render(page) {
  const settingsBox = h('div', { id: 'settings', 'data-state': 'loading' });
  page.append(h('h1', {}, 'Settings'), settingsBox, webhooksCard(), signalKeyCard(), passwordCard());

  async function load() {
    try {
      fill(settingsBox, settingsForm(await get('/config/settings')));
      settingsBox.dataset.state = 'ready';
    } catch (error) {
      settingsBox.dataset.state = 'error';
      fill(settingsBox, card('Trading', h('p', { class: 'error-text' }, error.message)));
    }
  }

  function settingsForm({ trading: t, notifications: n }) {
    const number = (id, value, attrs) => h('input', { id, type: 'number', required: true, value, ...attrs });
    const trading = {
      risk_level: h('select', { id: 'setting-risk-level' },
        RISK_LEVELS.map(([value, label]) => h('option', { value, selected: value === t.risk_level }, label))),
      max_position_size_usd: number('setting-max-position', t.max_position_size_usd, { min: 0.01, step: 'any' }),
      max_concurrent_positions: number('setting-max-positions', t.max_concurrent_positions, { min: 1, step: 1 }),
      max_daily_loss_usd: number('setting-max-daily-loss', t.max_daily_loss_usd, { min: 0.01, step: 'any' }),
      allowed_pairs: h('input', { id: 'setting-allowed-pairs', required: true, value: t.allowed_pairs.join(', '), 'data-list': true, spellcheck: 'false' }),
      paper_trading: h('input', { id: 'setting-paper', type: 'checkbox', checked: t.paper_trading }),
    };
    const notifications = Object.fromEntries(NOTIFICATIONS.map(([name]) => [name, h('input', { id: `setting-${name.replace(/_/g, '-')}`, type: 'checkbox', checked: n[name] })]));
    const save = h('button', { type: 'submit', class: 'primary', id: 'settings-save' }, 'Save settings');
    const form = h('form', { id: 'settings-form' },
      card('Trading',
        h('div', { class: 'grid-form top' },
          field('Risk level', trading.risk_level, 'The trailing stop: low 2 %, medium 3 %, high 5 %.'),
          field('Largest position (USD)', trading.max_position_size_usd, 'At most your plan\'s limit.'),
          field('Open positions at once', trading.max_concurrent_positions, 'At most your plan\'s limit.'),
          field('Daily loss limit (USD)', trading.max_daily_loss_usd, 'The bot pauses when the day\'s loss reaches it.'),
          field('Allowed pairs', trading.allowed_pairs, 'Comma-separated, BASE-QUOTE: the bot trades only these.')),
        check(trading.paper_trading, 'Paper trading (simulated money)', 'The mode the bot starts in unless you choose; live needs a paid plan or a trial.')),
      card('Mail', NOTIFICATIONS.map(([name, label, hint]) => check(notifications[name], label, hint))),
      h('div', { class: 'actions form-end' }, save));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const patch = {};
      const changedTrading = changes(trading, t);
      const changedMail = changes(notifications, n);
      if (Object.keys(changedTrading).length) patch.trading = changedTrading;
      if (Object.keys(changedMail).length) patch.notifications = changedMail;
      if (!Object.keys(patch).length) {
        toast('Nothing to save: no setting was changed.', 'info');
        return;
      }
      const answer = await act(save, () => put('/config/settings', patch), (r) => `Saved: ${r.updated_fields.join(', ')}.`);
      if (answer) load();
    });
    return form;
  }

  load();
}

function passwordCard() {
  const current = h('input', { id: 'password-current', type: 'password', required: true, autocomplete: 'current-password' });
  const next = h('input', { id: 'password-new', type: 'password', required: true, minlength: 8, maxlength: 128, autocomplete: 'new-password' });
  const again = h('input', { id: 'password-again', type: 'password', required: true, autocomplete: 'new-password' });
  const submit = h('button', { type: 'submit', class: 'primary', id: 'password-submit' }, 'Change password');
  const same = () => again.setCustomValidity(again.value === next.value ? '' : 'Type the same new password twice.');
  next.addEventListener('input', same);
  again.addEventListener('input', same);
  const form = h('form', { class: 'grid-form top', id: 'password-form' },
    field('Current password', current),
    field('New password', next, '8 to 128 characters, not a common password, not your e-mail address.'),
    field('New password again', again),
    h('div', { class: 'actions' }, submit));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const answer = await act(submit, () => put('/auth/change-password', { current_password: current.value, new_password: next.value }),
      (r) => `Password changed; ${r.other_sessions_revoked} other session${r.other_sessions_revoked === 1 ? '' : 's'} signed out.`);
    if (answer) form.reset();
  });
  return card('Password', form);
}
