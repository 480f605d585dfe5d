// What the admin pages share: loading into a container that tells browser tests its state,
// the page number, and the badges for statuses and alarm levels.

import { ApiError } from '../../api.js';
import { fill, h } from '../../dom.js';

// Runs `draw` (which fills `box` and returns how many items it shows, if it lists any) with
// data-state saying where it is; a failure shows the API's message in the box. Resolves to
// whether it worked.
export async function loadInto(box, draw) {
  box.dataset.state = 'loading';
  try {
    const count = await draw();
    if (count !== undefined) box.dataset.count = String(count);
    box.dataset.state = 'ready';
    return true;
  } catch (error) {
    // A bug in drawing is not the API's message: keep it visible to developers.
    if (!(error instanceof ApiError)) console.error(error);
    fill(box, h('p', { class: 'error-text' }, error.message));
    box.dataset.state = 'error';
    return false;
  }
}

// The page number of the hash query (from 1).
export function pageNumber(search) {
  return Math.max(1, Math.floor(Number(search.get('page'))) || 1);
}

const ACCOUNT_TONE = { active: 'status-ok', suspended: 'warn', disabled: 'status-error' };

// An account's status (active, suspended, disabled).
export function accountBadge(status) {
  return h('span', { class: `badge ${ACCOUNT_TONE[status] || ''}`.trim() }, status);
}

// An alarm's level (INFO, WARNING, CRITICAL, EMERGENCY).
export function levelBadge(level) {
  const name = String(level).toLowerCase();
  return h('span', { class: `badge level-${name}` }, name);
}

// A link to a user's page in the admin area.
export function userLink(userId, label) {
  return h('a', { href: `#/admin/users/${encodeURIComponent(userId)}` }, label || userId);
}

export const TIERS = ['free', 'basic', 'pro', 'enterprise'];
export const ACCOUNT_STATUSES = ['active', 'suspended', 'disabled'];

// <option>s of `values`, `selected` chosen; `none` (a label) adds an empty first option.
export function options(values, selected, none) {
  const list = none ? [['', none], ...values.map((v) => [v, v])] : values.map((v) => [v, v]);
  return list.map(([value, label]) => h('option', { value, selected: value === selected }, label));
}
