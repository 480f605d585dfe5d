// The form that uploads a plugin version: the component (.wasm) and its manifest (plugin.toml or
// JSON), checked by the server before it is stored; optionally made active at once.

import { post } from '../../api.js';
import { act, field, fill, h } from '../../dom.js';
import { base64, parseManifest } from './plugin-files.js';

// `uploaded(summary, version)` runs after the server has stored the version.
export function uploadForm(uploaded) {
  const wasm = h('input', { type: 'file', id: 'plugin-wasm', name: 'wasm', accept: '.wasm,application/wasm', required: true });
  const manifestFile = h('input', { type: 'file', id: 'plugin-manifest', name: 'manifest', accept: '.toml,.json,application/json', required: true });
  const activate = h('input', { type: 'checkbox', id: 'plugin-activate' });
  const preview = h('p', { class: 'hint', id: 'plugin-manifest-preview', 'aria-live': 'polite' }, 'Choose the plugin.toml the component was built with.');
  const submit = h('button', { type: 'submit', class: 'primary', id: 'plugin-upload' }, 'Upload');

  // The manifest of the chosen file (an error names the file and line).
  async function readManifest() {
    const file = manifestFile.files[0];
    return parseManifest(await file.text(), file.name);
  }

  manifestFile.addEventListener('change', async () => {
    if (!manifestFile.files.length) return;
    try {
      const m = await readManifest();
      preview.className = 'hint';
      fill(preview, `${m.display_name || m.name} — ${m.name} ${m.version} (${m.kind})`);
    } catch (error) {
      preview.className = 'error-text';
      fill(preview, error.message);
    }
  });

  const form = h('form', { class: 'grid-form', id: 'plugin-upload-form' },
    field('Component (.wasm)', wasm),
    field('Manifest (plugin.toml or JSON)', manifestFile),
    preview,
    h('div', { class: 'check wide' }, activate, h('label', { for: 'plugin-activate' }, 'Make it the active version at once')),
    h('div', { class: 'actions' }, submit));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    let version = '';
    const summary = await act(submit, async () => {
      const manifest = await readManifest();
      version = manifest.version;
      const bytes = new Uint8Array(await wasm.files[0].arrayBuffer());
      return post('/admin/plugins', { manifest, wasm_base64: base64(bytes), activate: activate.checked });
    }, (s) => `${s.display_name} ${version} is stored${s.active_version === version ? ' and active' : ''}.`);
    if (summary) {
      form.reset();
      uploaded(summary, version);
    }
  });
  return form;
}
