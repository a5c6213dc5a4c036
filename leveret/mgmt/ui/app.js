// The UI's shell: login, navigation by the URL's hash, and what the user's tags allow.

import { clearCredentials, get, hasCredentials, setCredentials } from './api.js';
import { errorText, h, replace } from './dom.js';
import * as admin from './page_admin.js';
import * as connections from './page_connections.js';
import * as exchanges from './page_exchanges.js';
import * as federation from './page_federation.js';
import * as map from './page_map.js';
import * as nodes from './page_nodes.js';
import * as overview from './page_overview.js';
import * as policies from './page_policies.js';
import * as queue from './page_queue.js';
import * as queues from './page_queues.js';

// [hash prefix, nav title (none: not in the menu), page, who sees it]
const PAGES = [
  ['overview', 'Overview', overview, () => true],
  ['map', 'Cluster map', map, () => true],
  ['connections', 'Connections', connections, () => true],
  ['exchanges', 'Exchanges', exchanges, () => true],
  ['queues', 'Queues', queues, () => true],
  ['queue', null, queue, () => true],
  ['nodes', 'Nodes', nodes, () => true],
  ['federation', 'Federation', federation, () => true],
  ['policies', 'Policies', policies, () => true],
  ['admin', 'Admin', admin, (can) => can.admin],
];

// What the user's tags allow, as RabbitMQ's UI reads them: `monitoring` alone sees but does not
// change; `management` sees only its vhosts (the API filters); `administrator` does everything.
export function abilities(tags) {
  const has = (tag) => tags.includes(tag);
  return {
    admin: has('administrator'),
    policy: has('administrator') || has('policymaker'),
    change: has('administrator') || has('policymaker') || has('management'),
    monitor: has('administrator') || has('monitoring'),
  };
}

const view = document.getElementById('view');
let session = null; // {user, can}
let current = null; // the page's cleanup

function route() {
  const [name, ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const found = PAGES.find(([prefix, , , allowed]) => prefix === name && allowed(session.can)) || PAGES[0];
  if (current) current();
  current = null;
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('current', a.dataset.page === found[0]);
  replace(view);
  current = found[2].render(view, rest.map(decodeURIComponent), session) || null;
}

function showShell() {
  document.getElementById('top').hidden = false;
  replace(document.getElementById('nav'), PAGES.filter(([, title, , allowed]) => title && allowed(session.can))
    .map(([prefix, title]) => h('a', { href: `#/${prefix}`, 'data-page': prefix }, title)));
  replace(document.getElementById('who'), `${session.user.name} (${session.user.tags.join(', ') || 'no tags'})`,
    h('button', { class: 'plain', onclick: logout }, 'Log out'));
  window.addEventListener('hashchange', route);
  route();
}

function logout() {
  clearCredentials();
  location.hash = '';
  location.reload();
}

async function start() {
  try {
    const user = await get('whoami');
    const tags = Array.isArray(user.tags) ? user.tags : String(user.tags || '').split(',').filter(Boolean);
    session = { user: { ...user, tags }, can: abilities(tags) };
    showShell();
  } catch (error) {
    clearCredentials();
    showLogin(error);
  }
}

function showLogin(error) {
  const form = h('form', { class: 'login card', onsubmit: (event) => {
    event.preventDefault();
    setCredentials(form.username.value, form.password.value);
    start();
  } },
  h('h1', {}, 'Leveret management'),
  h('label', {}, 'Username', h('input', { name: 'username', autocomplete: 'username', required: true })),
  h('label', {}, 'Password', h('input', { name: 'password', type: 'password', autocomplete: 'current-password' })),
  h('button', { type: 'submit' }, 'Log in'),
  error && error.status !== 401 ? errorText(error) : null,
  error && error.status === 401 ? h('p', { class: 'error', role: 'alert' }, 'Login failed') : null);
  replace(view, form);
}

if (hasCredentials()) start(); else showLogin(null);
