// The operator's pages (admin role only): a row of tabs and the page of the tab, chosen by the
// path after `admin`: overview, users (and one user), audit log, plugins (and one plugin).

import { h } from '../dom.js';
import * as overview from './admin/overview.js';
import * as users from './admin/users.js';
import * as user from './admin/user.js';
import * as audit from './admin/audit.js';
import * as plugins from './admin/plugins.js';
import * as plugin from './admin/plugin.js';

// Each tab: its path after `admin`, and the pages for the tab itself and for one item of it.
const TABS = [
  { path: '', label: 'Overview', list: overview },
  { path: 'users', label: 'Users', list: users, item: user },
  { path: 'audit', label: 'Audit log', list: audit },
  { path: 'plugins', label: 'Plugins', list: plugins, item: plugin },
];

export function render(page, ctx) {
  const [section = '', item] = ctx.params.rest;
  const tab = TABS.find((t) => t.path === section);
  page.classList.add('admin');
  page.append(h('nav', { class: 'tabs', id: 'admin-tabs', 'aria-label': 'Administration' },
    TABS.map((t) => h('a', {
      href: t.path ? `#/admin/${t.path}` : '#/admin',
      'aria-current': t === tab ? 'page' : null,
    }, t.label))));
  if (!tab) {
    page.append(h('p', { class: 'empty', id: 'admin-missing' }, 'There is no such admin page; pick one of the tabs above.'));
    return;
  }
  const view = item && tab.item ? tab.item : tab.list;
  view.render(page, ctx, item);
}
