// One plugin: what it is and what its active version says of itself, its versions (activate
// one, roll back to the previous), its configuration as a form built from the manifest's
// schema, and the upload of a new version. Version changes are confirmed first: every bot
// using the plugin moves to the other version on its next call.

import { get, post, put } from '../../api.js';
import { act, card, confirmDialog, field, fill, h, stat, table } from '../../dom.js';
import { qty } from '../../format.js';
import { loadInto } from './common.js';
import { uploadForm } from './plugin-upload.js';

export function render(page, ctx, name) {
  const path = `/admin/plugins/${encodeURIComponent(name)}`;
  const title = h('h1', { id: 'admin-plugin-name' }, name);
  const box = h('div', { id: 'admin-plugin', 'data-state': 'loading' });
  page.append(
    h('div', { class: 'page-head' }, title, h('a', { href: '#/admin/plugins', class: 'button' }, '← All plugins')),
    box,
    card('Upload a new version', uploadForm((summary) => (summary.name === name
      ? load()
      : ctx.navigate(`admin/plugins/${encodeURIComponent(summary.name)}`)))));

  function load() {
    return loadInto(box, async () => {
      const plugin = await get(path);
      box.dataset.activeVersion = plugin.active_version;
      fill(title, plugin.display_name || plugin.name);
      fill(box, about(plugin), versions(plugin), configuration(plugin));
    });
  }

  function about(plugin) {
    return card('About',
      plugin.description ? h('p', {}, plugin.description) : null,
      h('div', { class: 'stats' },
        stat('Kind', plugin.kind.replace('-', ' ')),
        stat('Active version', plugin.active_version, { id: 'admin-plugin-active' }),
        stat('Answers describe with', `${plugin.live.name} ${plugin.live.version}`, { id: 'admin-plugin-live' }),
        stat('Interface', plugin.interface_version),
        stat('Network access', plugin.allowed_hosts.length ? plugin.allowed_hosts.join(', ') : 'none')),
      plugin.live.capabilities?.length ? h('p', { class: 'hint' }, `Capabilities: ${plugin.live.capabilities.join(', ')}`) : null);
  }

  function versions(plugin) {
    const rollback = h('button', { type: 'button', id: 'plugin-rollback', disabled: !plugin.previous_version },
      plugin.previous_version ? `Roll back to ${plugin.previous_version}` : 'Roll back (no previous version)');
    rollback.addEventListener('click', async () => {
      if (!(await confirmDialog(`Roll back ${plugin.name}`,
        `${plugin.previous_version} becomes active again in place of ${plugin.active_version}. Calls already running finish on ${plugin.active_version}.`,
        { confirm: 'Roll back', danger: true }))) return;
      if (await act(rollback, () => post(`${path}/rollback`), (s) => `${s.display_name} ${s.active_version} is active again.`)) load();
    });

    const actions = (v) => {
      if (v.version === plugin.active_version) return h('span', { class: 'badge status-ok' }, 'active');
      const activate = h('button', { type: 'button', class: 'small', 'data-action': 'activate' }, 'Activate');
      activate.addEventListener('click', async () => {
        if (!(await confirmDialog(`Activate ${plugin.name} ${v.version}`,
          `Every bot using ${plugin.name} moves from ${plugin.active_version} to ${v.version} on its next call. You can roll back afterwards.`,
          { confirm: `Activate ${v.version}` }))) return;
        if (await act(activate, () => post(`${path}/activate`, { version: v.version }), (s) => `${s.display_name} ${s.active_version} is active.`)) load();
      });
      return activate;
    };

    return card('Versions',
      table([
        { label: 'Version', value: (v) => v.version },
        { label: 'From', value: (v) => (v.builtin ? 'built in' : 'upload') },
        { label: 'SHA-256', value: (v) => h('code', { title: v.sha256 }, `${v.sha256.slice(0, 16)}…`) },
        { label: 'Previous', value: (v) => (v.version === plugin.previous_version ? 'yes' : '') },
        { label: '', value: actions },
      ], plugin.versions, { id: 'plugin-versions', key: (v) => v.version }),
      h('div', { class: 'actions' }, rollback));
  }

  function configuration(plugin) {
    const keys = Object.keys(plugin.config_schema);
    if (!keys.length) return card('Configuration', h('p', { class: 'empty', id: 'plugin-config-empty' }, 'This version takes no configuration.'));
    const controls = Object.fromEntries(keys.map((key) => [key, control(key, plugin.config_schema[key], plugin.config[key])]));
    const save = h('button', { type: 'submit', class: 'primary', id: 'plugin-config-save' }, 'Save configuration');
    const form = h('form', { class: 'grid-form hinted-form', id: 'plugin-config-form' },
      keys.map((key) => controls[key].element),
      h('p', { class: 'hint' }, 'Values equal to their default are not stored, so they follow the default of later versions.'),
      h('div', { class: 'actions' }, save));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const config = {};
      for (const key of keys) {
        const value = controls[key].read();
        if (!sameAsDefault(plugin.config_schema[key], value)) config[key] = value;
      }
      if (await act(save, () => put(`${path}/config`, { config }), `${plugin.display_name} is configured.`)) load();
    });
    return card('Configuration', form);
  }

  load();
}

// A form control for one configuration key of `schema` ({type, default, description, min, max}),
// showing `current` (the value in force, as text); `read()` gives the value to send.
function control(key, schema, current) {
  const value = current ?? (schema.default === undefined ? '' : String(schema.default));
  const id = `config-${key}`;
  const limits = [
    schema.min !== undefined ? `min ${qty(schema.min)}` : '',
    schema.max !== undefined ? `max ${qty(schema.max)}` : '',
    schema.default !== undefined ? `default ${String(schema.default) === '' ? '(empty)' : schema.default}` : '',
  ].filter(Boolean).join(', ');
  const hint = [schema.description, limits ? `(${limits})` : ''].filter(Boolean).join(' ');
  if (schema.type === 'boolean') {
    const box = h('input', { type: 'checkbox', id, name: key, checked: value === 'true' });
    return {
      element: h('div', { class: 'check' }, box, h('label', { for: id }, key), hint ? h('small', { class: 'hint' }, hint) : null),
      read: () => box.checked,
    };
  }
  const numeric = schema.type === 'integer' || schema.type === 'number';
  const input = h('input', {
    id,
    name: key,
    value,
    type: numeric ? 'number' : 'text',
    step: numeric ? (schema.type === 'integer' ? 1 : 'any') : null,
    min: schema.min,
    max: schema.max,
    autocomplete: 'off',
  });
  // Numbers go as the text typed, so that nothing is rounded on the way.
  return { element: field(key, input, hint), read: () => input.value.trim() };
}

function sameAsDefault(schema, value) {
  if (schema.default === undefined) return value === '';
  const fallback = String(schema.default);
  if (schema.type === 'boolean') return String(value) === fallback;
  if (schema.type === 'integer' || schema.type === 'number') return value !== '' && Number(value) === Number(fallback);
  return value === fallback;
}
