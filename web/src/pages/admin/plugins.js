// Plugins by kind (strategies, risk rules, brokers) with the version each runs, and the upload
// of a new version.

import { get } from '../../api.js';
import { card, fill, h, table } from '../../dom.js';
import { loadInto } from './common.js';
import { uploadForm } from './plugin-upload.js';

const KINDS = [
  ['strategy', 'Strategies'],
  ['risk-rule', 'Risk rules'],
  ['broker', 'Brokers'],
];

const pluginHref = (name) => `#/admin/plugins/${encodeURIComponent(name)}`;

export function render(page, ctx) {
  const list = h('div', { id: 'admin-plugins', 'data-state': 'loading' });
  page.append(
    h('h1', {}, 'Plugins'),
    list,
    card('Upload a version', h('p', { class: 'hint' }, 'A new plugin, or a new version of one listed above. The server compiles it and checks it against its manifest before storing it.'),
      uploadForm((summary) => ctx.navigate(`admin/plugins/${encodeURIComponent(summary.name)}`))));

  const columns = [
    { label: 'Plugin', value: (p) => h('a', { href: pluginHref(p.name) }, p.display_name || p.name) },
    { label: 'Name', value: (p) => h('code', {}, p.name) },
    { label: 'Active version', value: (p) => h('span', { class: 'badge status-ok', 'data-active-version': p.active_version }, p.active_version) },
    { label: 'Previous', value: (p) => p.previous_version || '—' },
    { label: 'Versions', numeric: true, value: (p) => String(p.versions.length) },
    { label: 'Active from', value: (p) => (p.builtin ? 'built in' : 'upload') },
    { label: 'Interface', value: (p) => p.interface_version },
  ];

  loadInto(list, async () => {
    const { plugins } = await get('/admin/plugins');
    fill(list, KINDS.map(([kind, title]) => card(title, table(columns, plugins.filter((p) => p.kind === kind), {
      id: `plugins-${kind}`,
      key: (p) => p.name,
      empty: `No ${title.toLowerCase()} are installed; upload one below.`,
    }))));
    return plugins.length;
  });
}
