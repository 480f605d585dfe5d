// Outgoing notification webhooks: the list with test, deliveries and removal, a form to add
// one (JSON, Discord, Slack or Telegram), and the secret every post is signed with.

import { del, get, post } from '../api.js';
import { act, card, confirmDialog, field, fill, h, table, toast } from '../dom.js';
import { when } from '../format.js';
import { copyField } from './copy-field.js';

const FORMATS = [
  ['json', 'JSON (your own endpoint)'],
  ['discord', 'Discord channel webhook'],
  ['slack', 'Slack incoming webhook'],
  ['telegram', 'Telegram bot (sendMessage)'],
];
const eventName = (type) => type.replace(/_/g, ' ');
const DELIVERY_BADGE = { delivered: 'status-ok', failed: 'status-error', pending: 'status-paused' };

export function webhooksCard() {
  const list = h('div', { id: 'webhooks', 'data-state': 'loading' });
  const deliveries = h('div', { id: 'deliveries', class: 'output' });
  const addBox = h('div', { id: 'webhook-add' });
  const secretBox = h('div', { id: 'signing-secret' });
  const element = card('Notification webhooks',
    h('p', { class: 'hint' }, 'Trades, alarms and bot events posted to an endpoint of yours, or to a Discord, Slack or Telegram chat. Which mails you get is set above.'),
    list, deliveries, addBox, secretBox);

  // The webhook whose deliveries are shown, if any.
  let shown = null;

  async function load() {
    try {
      const data = await get('/config/notifications/webhooks');
      fill(list, table([
        { label: 'Address', value: (w) => h('code', {}, w.url) },
        { label: 'Format', value: (w) => w.format },
        { label: 'Events', class: () => 'wrap', value: (w) => (w.events.length === data.events.length ? 'all' : w.events.map(eventName).join(', ')) },
        { label: 'Chat', value: (w) => w.chat_id || '—' },
        { label: 'Added', value: (w) => when(w.created_at) },
        { label: '', value: actions },
      ], data.webhooks, {
        id: 'webhooks-table',
        key: (w) => w.id,
        empty: 'No webhook yet. Add one below to get your events where you work.',
      }));
      list.dataset.state = 'ready';
      list.dataset.count = String(data.webhooks.length);
      // Drawn once: a reload must not wipe what the person is typing, nor a secret shown once.
      if (!addBox.firstChild) {
        fill(addBox, addForm(data.events));
        fill(secretBox, secretPanel(data.signature_header));
      }
    } catch (error) {
      list.dataset.state = 'error';
      fill(list, h('p', { class: 'error-text' }, error.message));
    }
  }

  function actions(webhook) {
    const test = h('button', { type: 'button', class: 'small', 'data-action': 'test' }, 'Test');
    test.addEventListener('click', async () => {
      const answer = await act(test, () => post(`/config/notifications/webhooks/${encodeURIComponent(webhook.id)}/test`), (r) => r.message);
      if (answer && shown?.id === webhook.id) loadDeliveries();
    });
    const history = h('button', { type: 'button', class: 'small', 'data-action': 'deliveries' }, 'Deliveries');
    history.addEventListener('click', () => {
      shown = webhook;
      act(history, loadDeliveries);
    });
    const remove = h('button', { type: 'button', class: 'small danger', 'data-action': 'remove' }, 'Remove');
    remove.addEventListener('click', async () => {
      if (!(await confirmDialog('Remove webhook', `Stop posting to ${webhook.url}? Its queued deliveries are dropped.`, { confirm: 'Remove', danger: true }))) return;
      const answer = await act(remove, () => del(`/config/notifications/webhooks/${encodeURIComponent(webhook.id)}`), (r) => r.message);
      if (!answer) return;
      if (shown?.id === webhook.id) {
        shown = null;
        fill(deliveries);
      }
      load();
    });
    return h('div', { class: 'actions' }, test, history, remove);
  }

  // Shows the deliveries of `shown`; throws the API's error for the button that asked.
  async function loadDeliveries() {
    const data = await get(`/config/notifications/webhooks/${encodeURIComponent(shown.id)}/deliveries`);
    const refresh = h('button', { type: 'button', class: 'small', id: 'deliveries-refresh' }, 'Refresh');
    refresh.addEventListener('click', () => act(refresh, loadDeliveries));
    fill(deliveries,
      h('div', { class: 'page-head' }, h('h3', {}, `Deliveries to ${shown.url}`), refresh),
      table([
        { label: 'Queued', value: (d) => when(d.created_at) },
        { label: 'Event', value: (d) => d.event },
        { label: 'Status', value: (d) => h('span', { class: `badge ${DELIVERY_BADGE[d.status] || ''}` }, d.status) },
        { label: 'Attempts', numeric: true, value: (d) => String(d.attempts) },
        { label: 'HTTP', numeric: true, value: (d) => (d.last_http_status === null ? '—' : String(d.last_http_status)) },
        { label: 'Error', value: (d) => d.last_error || '—' },
        { label: 'Next attempt', value: (d) => when(d.next_attempt_at) },
        { label: 'Delivered', value: (d) => when(d.delivered_at) },
      ], data.deliveries, {
        id: 'deliveries-table',
        key: (d) => d.id,
        empty: 'Nothing sent yet. Press Test to send a test event.',
      }));
    deliveries.dataset.webhook = shown.id;
    deliveries.dataset.count = String(data.deliveries.length);
  }

  function addForm(events) {
    const url = h('input', { id: 'webhook-url', name: 'url', type: 'url', required: true, placeholder: 'https://hooks.example.com/tradehost', autocomplete: 'off' });
    const format = h('select', { id: 'webhook-format', name: 'format' }, FORMATS.map(([value, label]) => h('option', { value }, label)));
    const chat = h('input', { id: 'webhook-chat', name: 'chat_id', autocomplete: 'off' });
    const chatField = field('Chat id', chat, 'The Telegram chat the bot posts to.');
    const boxes = events.map((name) => h('input', { type: 'checkbox', id: `webhook-event-${name}`, value: name, checked: true }));
    // Ticked again when the form is reset after adding one.
    for (const box of boxes) box.defaultChecked = true;
    const submit = h('button', { type: 'submit', class: 'primary', id: 'webhook-add-submit' }, 'Add webhook');
    const showChat = () => {
      chatField.hidden = format.value !== 'telegram';
      chat.required = format.value === 'telegram';
    };
    format.addEventListener('change', showChat);
    showChat();
    const form = h('form', { class: 'grid-form top', id: 'webhook-form' },
      field('Address', url, 'https only; a Telegram address is https://api.telegram.org/bot<token>/sendMessage.'),
      field('Format', format),
      chatField,
      h('fieldset', { class: 'checks' }, h('legend', {}, 'Events'),
        boxes.map((box) => h('div', { class: 'check' }, box, h('label', { for: box.id }, eventName(box.value))))),
      h('div', { class: 'actions' }, submit));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const body = { url: url.value.trim(), format: format.value };
      if (format.value === 'telegram') body.chat_id = chat.value.trim();
      const chosen = boxes.filter((box) => box.checked).map((box) => box.value);
      // Without a list the server sends every event, including those added later.
      if (chosen.length !== boxes.length) body.events = chosen;
      const answer = await act(submit, () => post('/config/notifications/webhooks', body), 'Webhook added.');
      if (!answer) return;
      form.reset();
      showChat();
      if (answer.secret) showSecret(answer.secret, 'Your signing secret, shown this once: keep it with the receiver to check the signature of each post.');
      load();
    });
    return h('div', {}, h('h3', {}, 'Add a webhook'), form);
  }

  function secretPanel(header) {
    const rotate = h('button', { type: 'button', id: 'rotate-secret' }, 'New signing secret');
    rotate.addEventListener('click', async () => {
      if (!(await confirmDialog('New signing secret', 'Posts are signed with the new secret from now on: receivers that check the old one refuse them until you give them the new one.', { confirm: 'Make a new secret' }))) return;
      const answer = await act(rotate, () => post('/config/notifications/secret'));
      if (answer) showSecret(answer.secret, answer.message);
    });
    return h('div', {},
      h('h3', {}, 'Signing secret'),
      h('p', { class: 'hint' }, 'Each post carries ', h('code', {}, header),
        ': sha256= and the HMAC-SHA256, keyed with your secret, of the timestamp header, a dot and the body. The secret is shown only when it is made.'),
      h('div', { id: 'secret-output', class: 'output' }),
      h('div', { class: 'actions' }, rotate));
  }

  function showSecret(secret, message) {
    toast(message, 'success');
    fill(secretBox.querySelector('#secret-output'), copyField('Signing secret', secret, { id: 'secret-value', hint: 'Shown this once.' }).element);
  }

  load();
  return element;
}
