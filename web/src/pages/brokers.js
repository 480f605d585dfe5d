// Broker connections: connect (the paper broker needs no real keys), test, remove. Keys are
// write-only: the page only ever sees the masked key the API returns.

import { del, get, post } from '../api.js';
import { act, card, confirmDialog, field, fill, h, table, toast } from '../dom.js';
import { money, when } from '../format.js';

const BROKERS = [
  ['paper', 'Paper trading (simulated)'],
  ['coinbase', 'Coinbase'],
  ['kraken', 'Kraken'],
  ['binance', 'Binance'],
  ['okx', 'OKX'],
  ['alpaca', 'Alpaca'],
];

export function render(page) {
  const list = h('div', { id: 'brokers', 'data-state': 'loading' });
  page.append(h('h1', {}, 'Brokers'), card('Connected', list), card('Connect a broker', connectForm()));

  async function load() {
    try {
      const data = await get('/config/brokers');
      fill(list, table([
        { label: 'Broker', value: (b) => b.display_name || b.name },
        { label: 'Status', value: (b) => h('span', { class: `badge status-${b.status}` }, b.status) },
        { label: 'API key', value: (b) => h('code', {}, b.api_key_masked) },
        { label: 'Permissions', value: (b) => (b.permissions || []).join(', ') },
        { label: 'Last connected', value: (b) => when(b.last_connected) },
        { label: '', value: actions },
      ], data.brokers, {
        id: 'brokers-table',
        key: (b) => b.broker_id,
        empty: 'No broker connected yet. Connect the paper broker below to trade with simulated money.',
      }));
      list.dataset.state = 'ready';
      list.dataset.count = String(data.brokers.length);
    } catch (error) {
      fill(list, h('p', { class: 'error-text' }, error.message));
    }
  }

  function actions(connection) {
    const test = h('button', { type: 'button', class: 'small', 'data-action': 'test' }, 'Test');
    test.addEventListener('click', () => act(test, () => post(`/config/brokers/${encodeURIComponent(connection.broker_id)}/test`),
      (r) => `${connection.name}: ${r.status}, ${r.latency_ms} ms, balance ${money(r.account_balance)}`));
    const remove = h('button', { type: 'button', class: 'small danger', 'data-action': 'remove' }, 'Remove');
    remove.addEventListener('click', async () => {
      if (!(await confirmDialog('Remove broker', `Remove the ${connection.name} connection? Its keys are deleted.`, { confirm: 'Remove', danger: true }))) return;
      const answer = await act(remove, () => del(`/config/brokers/${encodeURIComponent(connection.broker_id)}`));
      if (answer) {
        toast(answer.warning ? `${answer.message} ${answer.warning}` : answer.message, 'success');
        load();
      }
    });
    return h('div', { class: 'actions' }, test, remove);
  }

  function connectForm() {
    const broker = h('select', { id: 'connect-broker', name: 'broker' }, BROKERS.map(([value, label]) => h('option', { value }, label)));
    const key = h('input', { id: 'connect-key', name: 'api_key', required: true, autocomplete: 'off' });
    const secret = h('input', { id: 'connect-secret', name: 'api_secret', type: 'password', required: true, autocomplete: 'new-password' });
    const passphrase = h('input', { id: 'connect-passphrase', name: 'passphrase', autocomplete: 'off' });
    const submit = h('button', { type: 'submit', class: 'primary', id: 'connect-submit' }, 'Connect');
    const hint = h('p', { class: 'hint', id: 'connect-hint' });
    const explain = () => fill(hint, broker.value === 'paper'
      ? 'The paper broker simulates a market: any key and secret will do.'
      : 'Keys with trade permission and no withdrawal permission. They are stored encrypted and never shown again.');
    broker.addEventListener('change', explain);
    explain();
    const form = h('form', { class: 'grid-form', id: 'connect-form' },
      field('Broker', broker), field('API key', key), field('API secret', secret),
      field('Passphrase', passphrase, 'Only for venues that issue one (OKX, Coinbase legacy keys).'),
      hint, h('div', { class: 'actions' }, submit));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const body = { broker: broker.value, api_key: key.value.trim(), api_secret: secret.value };
      if (passphrase.value.trim()) body.additional_params = { passphrase: passphrase.value.trim() };
      const answer = await act(submit, () => post('/config/brokers', body), (r) => r.message || 'Connected.');
      if (answer) {
        form.reset();
        explain();
        load();
      }
    });
    return form;
  }

  load();
}
