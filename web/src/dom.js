// Small DOM helpers: elements built from data (never from HTML strings), feedback for actions,
// confirmation dialogs and tables.

// h('button', {class: 'primary', onclick: fn, 'data-id': id}, 'Label', child, [more])
export function h(tag, attrs, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') element.className = value;
    else if (name.startsWith('on') && typeof value === 'function') {
      element.addEventListener(name.slice(2), value);
    } else if (name === 'value') element.value = value;
    else if (name === 'checked') element.checked = Boolean(value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : String(child));
  }
}

// Replaces an element's children.
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

// A labelled form control; `hint` is shown under it and tied to it for screen readers.
let nextId = 0;
export function field(label, control, hint) {
  const id = control.id || `field-${++nextId}`;
  control.id = id;
  const parts = [h('label', { for: id }, label), control];
  if (hint) {
    const hintId = `${id}-hint`;
    control.setAttribute('aria-describedby', hintId);
    parts.push(h('small', { id: hintId, class: 'hint' }, hint));
  }
  return h('div', { class: 'field' }, parts);
}

// Messages in the corner, announced to screen readers.
export function toast(message, kind = 'info') {
  const region = document.getElementById('toasts');
  const item = h('div', { class: `toast ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, message);
  region.append(item);
  setTimeout(() => item.remove(), kind === 'error' ? 8000 : 4000);
}

// Runs `action` for a button: the button shows it is pending and cannot be pressed twice; the
// outcome is a toast (`success` text, or the API's error message). Returns the action's value,
// or undefined when it failed.
export async function act(button, action, success) {
  if (button.disabled) return undefined;
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    const result = await action();
    if (success) toast(typeof success === 'function' ? success(result) : success, 'success');
    return result;
  } catch (error) {
    toast(error.message || String(error), 'error');
    return undefined;
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

// A modal question; resolves true when confirmed. `extra` (optional) is a form control shown in
// the dialog, read by the caller after it resolves.
export function confirmDialog(title, message, { confirm = 'Confirm', danger = false, extra = null } = {}) {
  return new Promise((resolve) => {
    const cancelButton = h('button', { type: 'button', value: 'cancel' }, 'Cancel');
    const confirmButton = h('button', { type: 'submit', value: 'confirm', class: danger ? 'danger' : 'primary' }, confirm);
    const form = h('form', { method: 'dialog' },
      h('h2', {}, title),
      h('p', {}, message),
      extra,
      h('div', { class: 'actions' }, cancelButton, confirmButton));
    const dialog = h('dialog', { class: 'confirm', 'aria-label': title }, form);
    cancelButton.addEventListener('click', () => dialog.close('cancel'));
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(dialog.returnValue === 'confirm');
    });
    document.body.append(dialog);
    dialog.showModal();
    cancelButton.focus();
  });
}

// A table of `rows`; each column is {label, value(row) -> node or text, class?(row), numeric?}.
// With no rows it shows `empty` (a sentence that says what to do).
export function table(columns, rows, { empty, key, id } = {}) {
  if (!rows.length) {
    return h('p', { class: 'empty', id: id ? `${id}-empty` : null }, empty);
  }
  return h('div', { class: 'table-wrap' },
    h('table', { id },
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.numeric ? 'num' : null }, c.label)))),
      h('tbody', {}, rows.map((row) => h('tr', { 'data-id': key ? key(row) : null },
        columns.map((c) => {
          const classes = [c.numeric ? 'num' : '', c.class ? c.class(row) : ''].filter(Boolean).join(' ');
          return h('td', { class: classes || null, 'data-label': c.label }, c.value(row));
        }))))));
}

// A card with a title and content.
export function card(title, ...content) {
  return h('section', { class: 'card' }, h('h2', {}, title), content);
}

// A label and a figure, for summary grids.
export function stat(label, value, { id, tone } = {}) {
  return h('div', { class: 'stat' },
    h('span', { class: 'stat-label' }, label),
    h('strong', { class: `stat-value ${tone || ''}`.trim(), id }, value));
}

// Previous and next links for the API's `pagination`; `href(page)` makes a page's link, `noun`
// names what is counted, `labels` the two links.
export function pager(p, href, noun, labels = ['← Previous', 'Next →']) {
  if (!p.total_items) return null;
  const link = (number, label, enabled, id) => (enabled
    ? h('a', { href: href(number), class: 'button', id }, label)
    : h('span', { class: 'button disabled', 'aria-disabled': 'true', id }, label));
  return h('nav', { class: 'pager', 'aria-label': 'Pages' },
    link(p.page - 1, labels[0], p.has_prev, 'page-prev'),
    h('span', { id: 'page-info' }, `Page ${p.page} of ${p.total_pages} · ${p.total_items} ${noun}`),
    link(p.page + 1, labels[1], p.has_next, 'page-next'));
}
