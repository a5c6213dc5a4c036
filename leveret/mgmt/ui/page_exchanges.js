// Exchanges: the list, and one exchange with its bindings and a form to publish to it.

import { post, seg } from './api.js';
import { errorText, fmtRate, formValues, h, link, replace, table } from './dom.js';
import { watch } from './live.js';

const json = (value) => h('code', {}, JSON.stringify(value ?? {}));

export function render(view, [vhost, name], session) {
  return name === undefined ? list(view) : detail(view, vhost, name, session);
}

function list(view) {
  const area = h('div');
  replace(view, h('h1', {}, 'Exchanges'), area);
  const live = watch('exchanges', (items) => replace(area, table([
    { title: 'Virtual host', value: (x) => x.vhost },
    { title: 'Name', value: (x) => link(`#/exchanges/${seg(x.vhost)}/${seg(x.name || 'amq.default')}`, x.name || '(AMQP default)') },
    { title: 'Type', value: (x) => x.type },
    { title: 'Features', value: (x) => [x.durable && 'D', x.auto_delete && 'AD', x.internal && 'I'].filter(Boolean).join(' ') },
    { title: 'In', value: (x) => fmtRate(((x.message_stats || {}).publish_in_details || {}).rate ?? 0), num: true },
    { title: 'Out', value: (x) => fmtRate(((x.message_stats || {}).publish_out_details || {}).rate ?? 0), num: true },
  ], items)), (error) => replace(area, errorText(error)));
  return () => live.stop();
}

function detail(view, vhost, name, session) {
  const base = `exchanges/${seg(vhost)}/${seg(name)}`;
  const bindings = h('div');
  const outcome = h('div', { id: 'outcome' });
  const form = h('form', { class: 'inline', id: 'publish', onsubmit: async (event) => {
    event.preventDefault();
    const values = formValues(form);
    try {
      const answer = await post(`${base}/publish`, { properties: {}, routing_key: values.routing_key, payload: values.payload, payload_encoding: 'string' });
      replace(outcome, h('p', { role: 'status' }, answer.routed ? 'Message published.' : 'Message published, but not routed.'));
    } catch (error) { replace(outcome, errorText(error)); }
  } },
  h('label', {}, 'Routing key', h('input', { name: 'routing_key' })),
  h('label', {}, 'Payload', h('textarea', { name: 'payload' })),
  h('button', { type: 'submit' }, 'Publish message'));
  replace(view, h('h1', {}, `Exchange ${name}`, h('span', { class: 'muted' }, ` in ${vhost}`)),
    h('h2', {}, 'Bindings from this exchange'), bindings,
    session.can.change ? h('section', { class: 'card' }, h('h2', {}, 'Publish message'), form) : null, outcome);
  const live = watch(`${base}/bindings/source`, (items) => replace(bindings, table([
    { title: 'To', value: (b) => (b.destination_type === 'queue' ? link(`#/queue/${seg(b.vhost)}/${seg(b.destination)}`, b.destination) : b.destination) },
    { title: 'Type', value: (b) => b.destination_type },
    { title: 'Routing key', value: (b) => b.routing_key },
    { title: 'Arguments', value: (b) => json(b.arguments) },
  ], items, { empty: 'No bindings.' })), (error) => replace(bindings, errorText(error)));
  return () => live.stop();
}
