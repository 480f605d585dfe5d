// A value the person has to copy (a secret shown once, a URL, a message to paste elsewhere): a
// read-only field with a Copy button.

import { field, h, toast } from '../dom.js';

// Copies the control's text; where the browser does not allow it (no clipboard outside https,
// or permission refused) the text is selected for the person to copy themselves.
async function copy(control) {
  try {
    if (!navigator.clipboard) throw new Error('no clipboard');
    await navigator.clipboard.writeText(control.value);
    toast('Copied to the clipboard.', 'success');
  } catch (_) {
    control.focus();
    control.select();
    toast('This browser did not let the page copy: the text is selected, press Ctrl+C (⌘C on a Mac).', 'info');
  }
}

// {element, control}; `rows` makes it a multi-line text area.
export function copyField(label, value, { id, hint, rows } = {}) {
  const control = rows
    ? h('textarea', { id, rows, readonly: true, spellcheck: 'false', class: 'code' })
    : h('input', { id, readonly: true, spellcheck: 'false', class: 'code' });
  control.value = value;
  const button = h('button', { type: 'button', class: 'small', 'data-copy': id }, 'Copy');
  button.addEventListener('click', () => copy(control));
  const element = field(label, control, hint);
  // The button sits beside the control, above the hint.
  const row = h('div', { class: 'copy-row' });
  control.replaceWith(row);
  row.append(control, button);
  return { element, control };
}
