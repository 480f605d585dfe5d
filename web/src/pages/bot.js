// Bot control: what the bot is doing, start (broker, paper or live, risk profile, strategy,
// pairs), stop with or without closing positions, pause and resume, and the emergency stop.

import { get, post } from '../api.js';
import { act, card, confirmDialog, field, fill, h, stat, toast } from '../dom.js';
import { duration, when } from '../format.js';

const ACTIVE = ['starting', 'running', 'paused', 'error'];

export function render(page, ctx) {
  const statusBox = h('div', { id: 'bot-status-card', 'data-state': 'loading' });
  const controls = h('div', { id: 'bot-controls' });
  page.append(h('h1', {}, 'Bot'), card('Status', statusBox), controls);

  let brokers = [];

  async function load() {
    try {
      const [status, connections] = await Promise.all([get('/trading/status'), get('/config/brokers')]);
      brokers = connections.brokers || [];
      draw(status);
    } catch (error) {
      fill(statusBox, h('p', { class: 'error-text' }, error.message));
    }
  }

  function draw(status) {
    statusBox.dataset.state = 'ready';
    statusBox.dataset.status = status.status;
    fill(statusBox,
      h('div', { class: 'stats' },
        stat('Status', h('span', { class: `badge status-${status.status}`, id: 'bot-status' }, status.status)),
        stat('Mode', status.paper_trading ? 'Paper' : 'Live'),
        stat('Broker', status.broker || '—'),
        stat('Strategy', status.strategy || '—'),
        stat('Risk profile', status.risk_profile || '—'),
        stat('Pairs', (status.symbols || []).join(', ') || '—'),
        stat('Up for', ACTIVE.includes(status.status) ? duration(status.uptime_seconds) : '—'),
        stat('Last scan', when(status.last_scan)),
        stat('Next scan', when(status.next_scan)),
        stat('Open positions', String(status.active_positions)),
        stat('Trades today', String(status.today_trades))),
      status.last_error ? h('p', { class: 'error-text', id: 'bot-error' }, `Last error: ${status.last_error}`) : null);
    fill(controls, ACTIVE.includes(status.status) ? runningControls(status) : startForm(status));
  }

  function startForm(status) {
    if (!brokers.length) {
      return card('Start the bot', h('p', { class: 'empty' }, 'Connect a broker first: ',
        h('a', { href: '#/brokers' }, 'connect the paper broker'), ' to trade with simulated money.'));
    }
    const broker = h('select', { name: 'broker', id: 'start-broker' },
      brokers.map((b) => h('option', { value: b.name, selected: b.name === status.broker }, b.display_name || b.name)));
    const mode = h('select', { name: 'paper_trading', id: 'start-mode' },
      h('option', { value: 'true', selected: status.paper_trading }, 'Paper (simulated money)'),
      h('option', { value: 'false', selected: !status.paper_trading }, 'Live (real orders)'));
    const risk = h('select', { name: 'risk_profile', id: 'start-risk' },
      ['low', 'medium', 'high'].map((r) => h('option', { value: r, selected: r === (status.risk_profile || 'medium') }, r)));
    const strategy = h('input', { name: 'strategy', id: 'start-strategy', placeholder: 'the server default', value: status.strategy || '' });
    const pairs = h('input', { name: 'symbols', id: 'start-symbols', placeholder: 'BTC-USD, ETH-USD', value: (status.symbols || []).join(', ') });
    const submit = h('button', { type: 'submit', class: 'primary', id: 'start-bot' }, 'Start bot');
    const form = h('form', { class: 'grid-form', id: 'start-form' },
      field('Broker', broker),
      field('Mode', mode, 'Live trading needs a paid plan or an active trial.'),
      field('Risk profile', risk, 'Sets the trailing stop: low 2 %, medium 3 %, high 5 %.'),
      field('Strategy', strategy),
      field('Pairs', pairs, 'Comma-separated, BASE-QUOTE; empty for the server default.'),
      h('div', { class: 'actions' }, submit));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const symbols = pairs.value.split(',').map((s) => s.trim().toUpperCase()).filter(Boolean);
      const body = {
        broker: broker.value,
        paper_trading: mode.value === 'true',
        risk_profile: risk.value,
      };
      if (strategy.value.trim()) body.strategy = strategy.value.trim();
      if (symbols.length) body.symbols = symbols;
      const started = await act(submit, () => post('/trading/start', body), (r) => r.message || 'The bot is starting.');
      if (started) load();
    });
    return card('Start the bot', form);
  }

  function runningControls(status) {
    const buttons = [];
    if (status.status === 'running') {
      const pause = h('button', { type: 'button', id: 'pause-bot' }, 'Pause');
      pause.addEventListener('click', async () => {
        if (await act(pause, () => post('/trading/pause'), 'Paused: exits are still managed, nothing new is opened.')) load();
      });
      buttons.push(pause);
    }
    if (status.status === 'paused') {
      const resume = h('button', { type: 'button', id: 'resume-bot' }, 'Resume');
      resume.addEventListener('click', async () => {
        if (await act(resume, () => post('/trading/resume'), 'Resumed.')) load();
      });
      buttons.push(resume);
    }
    const stop = h('button', { type: 'button', id: 'stop-bot' }, 'Stop');
    stop.addEventListener('click', async () => {
      const closeAll = h('input', { type: 'checkbox', id: 'stop-close' });
      const extra = h('div', { class: 'check' }, closeAll, h('label', { for: 'stop-close' }, 'Also close every open position at the market'));
      if (!(await confirmDialog('Stop the bot', 'The bot stops scanning. Open positions stay open unless you close them.', { confirm: 'Stop bot', extra }))) return;
      const answer = await act(stop, () => post('/trading/stop', { close_positions: closeAll.checked, emergency: false }));
      if (answer) {
        toast(answer.action_required ? `${answer.message} ${answer.action_required}` : answer.message || 'Stopped.', 'success');
        load();
      }
    });
    buttons.push(stop);
    const emergency = h('button', { type: 'button', class: 'danger', id: 'emergency-stop' }, 'Emergency stop');
    emergency.addEventListener('click', async () => {
      const reason = h('input', { id: 'emergency-reason', value: 'Emergency stop from the web app' });
      const extra = h('div', { class: 'field' }, h('label', { for: 'emergency-reason' }, 'Reason'), reason);
      if (!(await confirmDialog('Emergency stop', 'Stops the bot at once and closes every open position at the market.', { confirm: 'Stop and close everything', danger: true, extra }))) return;
      const answer = await act(emergency, () => post('/trading/emergency-stop', { reason: reason.value, close_positions: true }));
      if (answer) {
        toast(`${answer.message || 'Emergency stop done.'} (${answer.positions_closed} closed)`, 'success');
        load();
      }
    });
    buttons.push(emergency);
    return card('Control', h('div', { class: 'actions' }, buttons));
  }

  const soon = ctx.refresher(load, 300);
  ctx.live('bot_status', soon);
  ctx.live('kill_switch', soon);
  load();
}
