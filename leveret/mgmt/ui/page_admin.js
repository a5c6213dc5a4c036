// Administration: users, virtual hosts, permissions, definitions export and import.

import { del, get, post, put, seg } from './api.js';
import { errorText, formValues, h, replace, table } from './dom.js';
import { watch } from './live.js';

function form(id, inputs, submitText, onSubmit, outcome) {
  const element = h('form', { class: 'inline', id, onsubmit: async (event) => {
    event.preventDefault();
    try { await onSubmit(formValues(element)); element.reset(); } catch (error) { replace(outcome, errorText(error)); }
  } }, inputs, h('button', { type: 'submit' }, submitText));
  return element;
}

const input = (label, name, attrs = {}) => h('label', {}, label, h('input', { name, ...attrs }));

export function render(view) {
  const users = h('div', { id: 'users' });
  const vhosts = h('div', { id: 'vhosts' });
  const permissions = h('div', { id: 'permissions' });
  const outcome = h('div', { id: 'outcome' });
  const refresh = () => { u.refresh(); v.refresh(); p.refresh(); };
  const action = (work) => async () => { try { await work(); refresh(); } catch (error) { replace(outcome, errorText(error)); } };
  replace(view, h('h1', {}, 'Admin'), outcome,
    h('h2', {}, 'Users'), users,
    form('add-user', [input('Name', 'name', { required: true }), input('Password', 'password', { type: 'password' }),
      input('Tags', 'tags', { placeholder: 'administrator, monitoring' })], 'Add or update user',
    async (x) => { await put(`users/${seg(x.name)}`, { password: x.password, tags: x.tags }); refresh(); }, outcome),
    h('h2', {}, 'Virtual hosts'), vhosts,
    form('add-vhost', [input('Name', 'name', { required: true })], 'Add virtual host',
      async (x) => { await put(`vhosts/${seg(x.name)}`, {}); refresh(); }, outcome),
    h('h2', {}, 'Permissions'), permissions,
    form('set-permission', [input('User', 'user', { required: true }), input('Virtual host', 'vhost', { value: '/' }),
      input('Configure', 'configure', { value: '.*' }), input('Write', 'write', { value: '.*' }), input('Read', 'read', { value: '.*' })],
    'Set permission', async (x) => {
      await put(`permissions/${seg(x.vhost)}/${seg(x.user)}`, { configure: x.configure, write: x.write, read: x.read });
      refresh();
    }, outcome),
    h('h2', {}, 'Definitions'), definitions(outcome));
  const u = watch('users', (items) => replace(users, table([
    { title: 'Name', value: (x) => x.name },
    { title: 'Tags', value: (x) => (Array.isArray(x.tags) ? x.tags.join(', ') : x.tags) },
    { title: '', value: (x) => h('button', { class: 'danger', onclick: action(() => del(`users/${seg(x.name)}`)) }, 'Delete') },
  ], items)), (error) => replace(users, errorText(error)));
  const v = watch('vhosts', (items) => replace(vhosts, table([
    { title: 'Name', value: (x) => x.name }, { title: 'Messages', value: (x) => x.messages ?? 0, num: true },
    { title: '', value: (x) => h('button', { class: 'danger', onclick: action(() => del(`vhosts/${seg(x.name)}`)) }, 'Delete') },
  ], items)), (error) => replace(vhosts, errorText(error)));
  const p = watch('permissions', (items) => replace(permissions, table([
    { title: 'User', value: (x) => x.user }, { title: 'Virtual host', value: (x) => x.vhost },
    { title: 'Configure', value: (x) => x.configure }, { title: 'Write', value: (x) => x.write }, { title: 'Read', value: (x) => x.read },
    { title: '', value: (x) => h('button', { class: 'danger', onclick: action(() => del(`permissions/${seg(x.vhost)}/${seg(x.user)}`)) }, 'Clear') },
  ], items)), (error) => replace(permissions, errorText(error)));
  return () => { u.stop(); v.stop(); p.stop(); };
}

function definitions(outcome) {
  const exportButton = h('button', { onclick: async () => {
    try {
      const document_ = await get('definitions');
      const url = URL.createObjectURL(new Blob([JSON.stringify(document_, null, 2)], { type: 'application/json' }));
      const anchor = h('a', { href: url, download: 'leveret-definitions.json' });
      anchor.click();
      URL.revokeObjectURL(url);
    } catch (error) { replace(outcome, errorText(error)); }
  } }, 'Download definitions');
  const file = h('input', { type: 'file', accept: 'application/json', 'aria-label': 'definitions file' });
  const importButton = h('button', { onclick: async () => {
    try {
      const text = await file.files[0].text();
      await post('definitions', JSON.parse(text));
      replace(outcome, h('p', { role: 'status' }, 'Definitions imported.'));
    } catch (error) { replace(outcome, errorText(error)); }
  } }, 'Import definitions');
  return h('div', { class: 'toolbar' }, exportButton, file, importButton);
}
