// The webhook key that lets an alerting tool (TradingView) send the bot signals: created or
// rotated here, shown once, with the address to post to and an alert message ready to paste.

import { post } from '../api.js';
import { act, card, confirmDialog, field, fill, h } from '../dom.js';
import { when } from '../format.js';
import { copyField } from './copy-field.js';

// TradingView fills the {{…}} placeholders when the alert fires; {{close}} is a bare number.
function alertMessage(key, symbol) {
  return [
    '{',
    `  "api_key": ${JSON.stringify(key)},`,
    `  "symbol": ${JSON.stringify(symbol)},`,
    '  "action": "{{strategy.order.action}}",',
    '  "price": {{close}}',
    '}',
  ].join('\n');
}

export function signalKeyCard() {
  const output = h('div', { id: 'webhook-key-output', class: 'output' });
  const create = h('button', { type: 'button', class: 'primary', id: 'create-webhook-key' }, 'Create a webhook key');
  create.addEventListener('click', async () => {
    const confirmed = await confirmDialog('New webhook key',
      'If you have a key already, it stops working at once: alerts that send it are refused until you paste the new one. The new key is shown only this once.',
      { confirm: 'Create key' });
    if (!confirmed) return;
    const answer = await act(create, () => post('/config/webhook-key'), 'New webhook key created: copy it now, it is not shown again.');
    if (answer) drawKey(answer);
  });

  function drawKey({ webhook_key: key, created_at: created }) {
    const pair = h('input', { id: 'alert-symbol', value: '{{ticker}}', spellcheck: 'false' });
    const message = copyField('TradingView alert message', alertMessage(key, pair.value), {
      id: 'alert-message',
      rows: 6,
      hint: '{{strategy.order.action}} is buy or sell; add "size_usd": 250 for a size other than your largest position, "close" as the action closes the position.',
    });
    pair.addEventListener('input', () => {
      message.control.value = alertMessage(key, pair.value.trim() || '{{ticker}}');
    });
    fill(output,
      copyField('Webhook key', key, { id: 'webhook-key', hint: `Created ${when(created)}. Only its hash is stored: a lost key cannot be shown again, create a new one.` }).element,
      copyField('Webhook URL', `${location.origin}/api/v1/webhooks/signals`, { id: 'webhook-url-signals', hint: 'The alert\'s Webhook URL (TradingView: Notifications → Webhook URL).' }).element,
      field('Pair in the message', pair, 'tradehost takes pairs as BASE-QUOTE (ETH-USD). TradingView\'s {{ticker}} has no dash (ETHUSD) on most charts: type the pair here then.'),
      message.element);
    output.dataset.state = 'shown';
  }

  return card('Signals from TradingView',
    h('p', {}, 'Alerts posted to your webhook URL make the running bot buy, sell or close, through your settings and plan limits. They are authenticated by your webhook key.'),
    h('div', { class: 'actions' }, create),
    output);
}
