// Policies and operator policies: list, create or edit, delete; the API's validation messages
// are shown as they come.

import { del, put, seg } from './api.js';
import { errorText, formValues, h, replace, table } from './dom.js';
import { watch } from './live.js';

const KINDS = [['policies', 'Policies', ['queues', 'exchanges', 'all']], ['operator-policies', 'Operator policies', ['queues']]];

export function render(view, _params, session) {
  replace(view, h('h1', {}, 'Policies'));
  const stops = KINDS.map(([kind, title, applyTo]) => section(view, kind, title, applyTo, session));
  return () => stops.forEach((stop) => stop());
}

function section(view, kind, title, applyTo, session) {
  const area = h('div', { id: kind });
  const outcome = h('div');
  const form = h('form', { class: 'inline', 'data-form': kind, onsubmit: async (event) => {
    event.preventDefault();
    const values = formValues(form);
    let definition;
    try { definition = JSON.parse(values.definition || '{}'); } catch {
      replace(outcome, h('p', { class: 'error', role: 'alert' }, 'The definition is not valid JSON.'));
      return;
    }
    try {
      await put(`${kind}/${seg(values.vhost)}/${seg(values.name)}`, {
        pattern: values.pattern, definition, priority: Number(values.priority || 0), 'apply-to': values['apply-to'],
      });
      replace(outcome, h('p', { role: 'status' }, `Policy ${values.name} saved.`));
      form.reset();
      live.refresh();
    } catch (error) { replace(outcome, errorText(error)); }
  } },
  h('label', {}, 'Virtual host', h('input', { name: 'vhost', value: '/' })),
  h('label', {}, 'Name', h('input', { name: 'name', required: true })),
  h('label', {}, 'Pattern', h('input', { name: 'pattern', required: true })),
  h('label', {}, 'Apply to', h('select', { name: 'apply-to' }, applyTo.map((a) => h('option', { value: a }, a)))),
  h('label', {}, 'Priority', h('input', { name: 'priority', type: 'number', value: 0 })),
  h('label', {}, 'Definition (JSON)', h('textarea', { name: 'definition', placeholder: '{"max-length": 1000}' })),
  h('button', { type: 'submit' }, 'Save'));
  const edit = (p) => {
    for (const [field, value] of [['vhost', p.vhost], ['name', p.name], ['pattern', p.pattern], ['apply-to', p['apply-to']],
      ['priority', p.priority], ['definition', JSON.stringify(p.definition)]]) form.elements[field].value = value;
  };
  const remove = async (p) => {
    try { await del(`${kind}/${seg(p.vhost)}/${seg(p.name)}`); live.refresh(); } catch (error) { replace(outcome, errorText(error)); }
  };
  view.append(h('h2', {}, title), area, session.can.policy ? h('section', { class: 'card' }, form) : null, outcome);
  const live = watch(kind, (items) => replace(area, table([
    { title: 'Virtual host', value: (p) => p.vhost }, { title: 'Name', value: (p) => p.name },
    { title: 'Pattern', value: (p) => p.pattern }, { title: 'Apply to', value: (p) => p['apply-to'] },
    { title: 'Definition', value: (p) => h('code', {}, JSON.stringify(p.definition)) },
    { title: 'Priority', value: (p) => p.priority, num: true },
    { title: '', value: (p) => (session.can.policy ? [h('button', { class: 'plain', onclick: () => edit(p) }, 'Edit'), ' ',
      h('button', { class: 'danger', 'data-delete': p.name, onclick: () => remove(p) }, 'Delete')] : '') },
  ], items, { empty: 'No policies.' })), (error) => replace(area, errorText(error)));
  return () => live.stop();
}
