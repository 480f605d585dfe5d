// The plan: the subscription, this period's usage against the plan's limits, every plan with
// its prices, features and limits, changing plan (the server computes the proration and the
// page shows it once charged) and cancelling at the period's end or at once.

import { get, post } from '../api.js';
import { act, card, confirmDialog, field, fill, h, stat, toast } from '../dom.js';
import { money, qty, when } from '../format.js';

const PAID = ['basic', 'pro', 'enterprise'];
const INTERVALS = [['monthly', 'Monthly', 'month'], ['yearly', 'Yearly', 'year']];
const REASONS = [
  ['', 'No reason given'],
  ['too_expensive', 'Too expensive'],
  ['not_using', 'Not using it enough'],
  ['missing_features', 'Missing features'],
  ['switching', 'Moving to another service'],
  ['other', 'Something else'],
];
const STATUS_BADGE = { active: 'status-ok', trialing: 'status-ok', past_due: 'status-error' };
// With the built-in payment provider (no payment service connected) any id is accepted, and one
// containing "declined" is refused, as in a payment service's test mode.
const DEFAULT_PAYMENT_METHOD = 'pm_card_visa';

const per = (interval) => INTERVALS.find(([value]) => value === interval)?.[2] || interval;

export function render(page) {
  const result = h('div', { id: 'subscription-result', role: 'status' });
  const currentBox = h('div', { id: 'subscription-current', 'data-state': 'loading' });
  const usageBox = h('div', { id: 'subscription-usage', 'data-state': 'loading' });
  const plansBox = h('div', { class: 'plans', id: 'plans', 'data-state': 'loading' });

  const tier = h('select', { id: 'upgrade-tier', name: 'tier' });
  const interval = h('select', { id: 'upgrade-interval', name: 'interval' },
    INTERVALS.map(([value, label]) => h('option', { value }, label)));
  const method = h('input', { id: 'upgrade-method', name: 'payment_method_id', required: true, autocomplete: 'off', spellcheck: 'false' });
  const review = h('button', { type: 'submit', class: 'primary', id: 'upgrade-submit' }, 'Review change');
  const changeForm = h('form', { class: 'grid-form top', id: 'upgrade-form' },
    field('Plan', tier), field('Billing', interval),
    field('Payment method id', method, 'This server records payments itself (no payment service is connected): any id is taken, one containing "declined" is refused.'),
    h('div', { class: 'actions' }, review));

  page.append(h('h1', {}, 'Plan'), result,
    card('Your subscription', currentBox),
    card('Usage this period', usageBox),
    h('section', { class: 'plans-section' }, h('h2', {}, 'Plans'), plansBox),
    card('Change plan', changeForm));

  let plans = [];
  let current = null;

  async function load() {
    const [plansAnswer, currentAnswer, usageAnswer] = await Promise.allSettled([
      get('/subscription/plans'), get('/subscription/current'), get('/subscription/usage'),
    ]);
    if (currentAnswer.status === 'fulfilled') drawCurrent(currentAnswer.value);
    else failed(currentBox, currentAnswer.reason);
    if (usageAnswer.status === 'fulfilled') drawUsage(usageAnswer.value);
    else failed(usageBox, usageAnswer.reason);
    if (plansAnswer.status === 'fulfilled') drawPlans(plansAnswer.value.plans);
    else failed(plansBox, plansAnswer.reason);
  }

  function failed(box, error) {
    box.dataset.state = 'error';
    fill(box, h('p', { class: 'error-text' }, error.message));
  }

  function drawCurrent(s) {
    current = s;
    const paid = Boolean(s.subscription_id);
    const pm = s.payment_method;
    if (!method.value) method.value = pm?.id || DEFAULT_PAYMENT_METHOD;
    const cancel = h('button', { type: 'button', class: 'danger', id: 'cancel-subscription' }, 'Cancel subscription');
    cancel.addEventListener('click', () => cancelSubscription(cancel));
    fill(currentBox,
      h('div', { class: 'stats' },
        stat('Plan', s.tier, { id: 'current-tier' }),
        stat('Status', h('span', { class: `badge ${STATUS_BADGE[s.status] || ''}`, id: 'current-status' }, s.status)),
        paid ? stat('Price', `${money(s.amount)} a ${per(s.interval)}`) : null,
        stat('Period', s.current_period_end ? `${when(s.current_period_start)} – ${when(s.current_period_end)}` : `since ${when(s.current_period_start)}`),
        s.trial_ends_at ? stat(s.trial_active ? 'Trial ends' : 'Trial ended', when(s.trial_ends_at), { id: 'trial-ends' }) : null,
        pm ? stat('Payment method', `${pm.brand} •••• ${pm.last4}, expires ${pm.exp_month}/${pm.exp_year}`) : null,
        paid && !s.cancel_at_period_end ? stat('Next payment', `${money(s.next_billing_amount)} on ${when(s.next_billing_date)}`, { id: 'next-billing' }) : null),
      s.trial_active ? h('p', { class: 'hint' }, 'During the trial you have the Basic plan\'s limits, live trading included.') : null,
      s.cancel_at_period_end ? h('p', { class: 'warn-text', id: 'cancel-pending' },
        `Cancelled: ${s.tier} stays until ${when(s.current_period_end)}, then the Free plan applies. Choosing a plan below renews it.`) : null,
      paid ? h('div', { class: 'actions' }, cancel) : null);
    currentBox.dataset.state = 'ready';
    currentBox.dataset.tier = s.tier;
  }

  function meter(label, used, limit, id) {
    const bar = h('div', { class: 'usage-fill' });
    bar.style.width = `${limit ? Math.min(100, (used / limit) * 100) : 0}%`;
    // The same thresholds as the server's warnings: over the limit, or at 80 % of it.
    const level = !limit ? 'free' : used > limit ? 'over' : used * 10 >= limit * 8 ? 'near' : 'ok';
    return h('div', { class: `usage usage-${level}`, id, 'data-used': used, 'data-limit': limit ?? 'none' },
      h('div', { class: 'usage-head' }, h('span', {}, label), h('span', {}, limit ? `${qty(used)} of ${qty(limit)}` : `${qty(used)}, no limit`)),
      h('div', { class: 'usage-bar', role: 'progressbar', 'aria-label': label, 'aria-valuemin': 0, 'aria-valuemax': limit || used, 'aria-valuenow': used }, bar));
  }

  function drawUsage({ period_start: start, period_end: end, usage: u, overage, warnings }) {
    fill(usageBox,
      h('p', { class: 'hint' }, `${when(start)} – ${when(end)}`),
      h('div', { class: 'usage-list' },
        meter('API calls', u.api_calls, u.api_calls_limit, 'usage-api-calls'),
        meter('Trades opened today', u.trades_executed, u.trades_limit, 'usage-trades'),
        meter('Most positions open at once', u.max_concurrent_positions, u.max_concurrent_positions_limit, 'usage-positions'),
        meter('Broker connections', u.brokers_connected, u.brokers_limit, 'usage-brokers')),
      h('p', {}, `Positions opened this period: ${qty(u.positions_opened)}`),
      warnings.length ? h('ul', { class: overage ? 'error-text' : 'warn-text', id: 'usage-warnings' }, warnings.map((w) => h('li', {}, w))) : null);
    usageBox.dataset.state = 'ready';
  }

  function drawPlans(list) {
    plans = list;
    const chosen = tier.value;
    fill(tier, plans.filter((p) => PAID.includes(p.tier)).map((p) => h('option', { value: p.tier, selected: p.tier === chosen }, p.name)));
    fill(plansBox, plans.map(planCard));
    plansBox.dataset.state = 'ready';
    plansBox.dataset.count = String(plans.length);
  }

  function planCard(plan) {
    const mine = plan.tier === current?.tier;
    const limits = plan.limits;
    let choose = null;
    if (PAID.includes(plan.tier)) {
      choose = h('button', { type: 'button', 'data-tier': plan.tier }, mine ? 'Change billing' : `Choose ${plan.name}`);
      choose.addEventListener('click', () => {
        tier.value = plan.tier;
        changeForm.scrollIntoView({ behavior: 'smooth', block: 'center' });
        interval.focus({ preventScroll: true });
      });
    }
    return h('article', { class: `card plan${mine ? ' current' : ''}`, id: `plan-${plan.tier}`, 'data-tier': plan.tier },
      h('div', { class: 'plan-head' }, h('h3', {}, plan.name),
        plan.popular ? h('span', { class: 'badge' }, 'Popular') : null,
        mine ? h('span', { class: 'badge status-ok' }, 'Your plan') : null),
      h('p', { class: 'price' }, plan.price_monthly ? `${money(plan.price_monthly)} a month` : 'No charge'),
      plan.price_yearly ? h('p', { class: 'hint' }, `or ${money(plan.price_yearly)} a year, saving ${money(plan.yearly_savings)}`) : null,
      h('ul', { class: 'features' }, plan.features.map((f) => h('li', {}, f))),
      h('dl', { class: 'limits' },
        h('dt', {}, 'Largest position'), h('dd', {}, limits.max_position_size_usd ? money(limits.max_position_size_usd) : 'paper only'),
        h('dt', {}, 'Open positions'), h('dd', {}, String(limits.max_positions)),
        h('dt', {}, 'Trades a day'), h('dd', {}, String(limits.max_daily_trades)),
        h('dt', {}, 'API calls a minute'), h('dd', {}, String(limits.api_calls_per_minute))),
      choose);
  }

  changeForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const plan = plans.find((p) => p.tier === tier.value);
    if (!plan) return;
    const yearly = interval.value === 'yearly';
    const price = yearly ? plan.price_yearly : plan.price_monthly;
    const paid = Boolean(current?.subscription_id);
    // There is no preview route: the credit is known once the server has made the change.
    const extra = h('div', { class: 'dialog-notes' },
      paid
        ? h('p', {}, `You pay ${money(current.amount)} a ${per(current.interval)} until ${when(current.current_period_end)}. The unused part is credited against the new price; the credit and the amount charged are shown once the change is made.`)
        : h('p', {}, `${money(price)} is charged now${current?.trial_active ? ' and your trial ends' : ''}.`),
      h('p', { class: 'hint' }, `Payment method: ${method.value.trim()}`));
    const confirmed = await confirmDialog('Change plan',
      `Move to ${plan.name}, billed ${yearly ? 'yearly' : 'monthly'} at ${money(price)} a ${per(interval.value)}, starting now.`,
      { confirm: `Subscribe to ${plan.name}`, extra });
    if (!confirmed) return;
    const answer = await act(review, () => post('/subscription/upgrade', {
      tier: tier.value, interval: interval.value, payment_method_id: method.value.trim(),
    }));
    if (!answer) return;
    report(`${answer.message}. Price ${money(answer.amount)} a ${per(answer.interval)}, proration credit ${money(answer.proration_credit)}, charged now ${money(answer.amount_due_now)}.`, 'upgraded');
    load();
  });

  async function cancelSubscription(button) {
    const atEnd = h('input', { type: 'radio', name: 'cancel-when', id: 'cancel-at-end', value: 'end', checked: true });
    const now = h('input', { type: 'radio', name: 'cancel-when', id: 'cancel-now', value: 'now' });
    const reason = h('select', { id: 'cancel-reason' }, REASONS.map(([value, label]) => h('option', { value }, label)));
    const feedback = h('input', { id: 'cancel-feedback', maxlength: 2000, autocomplete: 'off' });
    const extra = h('div', { class: 'dialog-notes' },
      h('div', { class: 'check' }, atEnd, h('label', { for: atEnd.id }, `At the end of the period: keep ${current.tier} until ${when(current.current_period_end)}`)),
      h('div', { class: 'check' }, now, h('label', { for: now.id }, 'Now: back to Free at once, the unused part refunded')),
      field('Reason', reason),
      field('Anything to tell us? (optional)', feedback));
    const confirmed = await confirmDialog('Cancel subscription', 'Your plan\'s limits end with it; your trades and settings stay.',
      { confirm: 'Confirm cancellation', danger: true, extra });
    if (!confirmed) return;
    const body = { cancel_immediately: now.checked };
    if (reason.value) body.reason = reason.value;
    if (feedback.value.trim()) body.feedback = feedback.value.trim();
    const answer = await act(button, () => post('/subscription/cancel', body));
    if (!answer) return;
    report(`${answer.message}. Access until ${when(answer.access_until)}, refund ${money(answer.refund_amount)}.`, 'cancelled');
    load();
  }

  // The outcome of a change, in a toast and on the page (the figures are worth reading twice).
  function report(text, state) {
    toast(text, 'success');
    fill(result, card('Done', h('p', { id: 'subscription-result-text' }, text)));
    result.dataset.state = state;
  }

  load();
}
