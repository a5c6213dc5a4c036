// One queue: figures, rates chart, consumers, bindings, arguments, effective policy; publish,
// get, purge and delete.

import { del, get, post, seg } from './api.js';
import { ageQuery, periodPicker } from './chart.js';
import { errorText, fields, fmtBytes, fmtNumber, formValues, h, replace, table } from './dom.js';
import { POLL_MS, watch } from './live.js';
import { charts } from './page_overview.js';

const json = (value) => h('code', {}, JSON.stringify(value ?? {}));

export function render(view, [vhost, name], session) {
  let period = '1 min';
  let bindingsAt = 0;
  const base = `queues/${seg(vhost)}/${seg(name)}`;
  const summary = h('div');
  const chartArea = h('div');
  const consumers = h('div');
  const bindings = h('div');
  const problem = h('div');
  const outcome = h('div', { id: 'outcome' });
  replace(view, h('h1', {}, `Queue ${name}`, h('span', { class: 'muted' }, ` in ${vhost}`)), problem, summary,
    h('div', { class: 'toolbar' }, 'Charts over', periodPicker(period, (p) => { period = p; live.refresh(); })),
    chartArea, h('h2', {}, 'Consumers'), consumers, h('h2', {}, 'Bindings'), bindings,
    session.can.change ? actions(vhost, name, base, outcome, () => live.refresh()) : null, outcome);
  const live = watch(() => `${base}?${ageQuery(period)}`, (q) => {
    replace(problem);
    replace(summary, h('section', { class: 'card' }, fields([
      ['Node', q.node], ['Type', q.type], ['State', q.state], ['Durable', String(q.durable)],
      ['Auto delete', String(q.auto_delete)], ['Exclusive', String(q.exclusive)],
      ['Ready', fmtNumber(q.messages_ready)], ['Unacked', fmtNumber(q.messages_unacknowledged)],
      ['Total', h('span', { id: 'queue-total' }, fmtNumber(q.messages))], ['Bytes', fmtBytes(q.message_bytes)],
      ['Consumers', fmtNumber(q.consumers)], ['Arguments', json(q.arguments)],
      ['Policy', q.policy || ''], ['Operator policy', q.operator_policy || ''],
      ['Effective policy', json(q.effective_policy_definition)],
    ])));
    replace(chartArea, charts(q.message_stats || {}, q));
    replace(consumers, table([
      { title: 'Channel', value: (c) => (c.channel_details || {}).name },
      { title: 'Tag', value: (c) => c.consumer_tag },
      { title: 'Ack required', value: (c) => String(c.ack_required) },
      { title: 'Prefetch', value: (c) => c.prefetch_count, num: true },
      { title: 'Active', value: (c) => String(c.active) },
    ], q.consumer_details || [], { empty: 'No consumers.' }));
    // Bindings change rarely: at most one request for them a poll interval, however often
    // the stream brings the queue's figures.
    if (Date.now() - bindingsAt < POLL_MS) return;
    bindingsAt = Date.now();
    get(`${base}/bindings`).then((list) => replace(bindings, table([
      { title: 'From', value: (b) => b.source || '(default exchange)' },
      { title: 'Routing key', value: (b) => b.routing_key },
      { title: 'Arguments', value: (b) => json(b.arguments) },
    ], list)), (error) => replace(bindings, errorText(error)));
  }, (error) => replace(problem, errorText(error)));
  return () => live.stop();
}

function actions(vhost, name, base, outcome, refresh) {
  const attempt = (work) => async (event) => {
    event.preventDefault();
    try { await work(event.target); refresh(); } catch (error) { replace(outcome, errorText(error)); }
  };
  const publish = h('form', { class: 'inline', id: 'publish', onsubmit: attempt(async (form) => {
    const values = formValues(form);
    const answer = await post(`exchanges/${seg(vhost)}/amq.default/publish`, {
      properties: { delivery_mode: Number(values.delivery_mode) }, routing_key: name,
      payload: values.payload, payload_encoding: 'string',
    });
    replace(outcome, h('p', { role: 'status' }, answer.routed ? 'Message published.' : 'Message published, but not routed.'));
  }) },
  h('label', {}, 'Delivery mode', h('select', { name: 'delivery_mode' }, h('option', { value: 1 }, '1 - non-persistent'), h('option', { value: 2 }, '2 - persistent'))),
  h('label', {}, 'Payload', h('textarea', { name: 'payload' })),
  h('button', { type: 'submit' }, 'Publish message'));
  const fetchForm = h('form', { class: 'inline', id: 'get', onsubmit: attempt(async (form) => {
    const values = formValues(form);
    const messages = await post(`${base}/get`, { count: Number(values.count), ackmode: values.ackmode, encoding: 'auto', truncate: 50000 });
    replace(outcome, messages.length ? messages.map((m, i) => h('div', { class: 'message', 'data-message': i },
      `Message ${i + 1}  routing key: ${m.routing_key}  redelivered: ${m.redelivered}  remaining: ${m.message_count}\n`,
      h('span', { class: 'payload' }, m.payload))) : h('p', { role: 'status' }, 'Queue is empty'));
  }) },
  h('label', {}, 'Ack mode', h('select', { name: 'ackmode' },
    h('option', { value: 'ack_requeue_true' }, 'Nack message requeue true'),
    h('option', { value: 'ack_requeue_false' }, 'Automatic ack'),
    h('option', { value: 'reject_requeue_true' }, 'Reject requeue true'),
    h('option', { value: 'reject_requeue_false' }, 'Reject requeue false'))),
  h('label', {}, 'Messages', h('input', { name: 'count', type: 'number', min: 1, value: 1 })),
  h('button', { type: 'submit' }, 'Get messages'));
  const purge = h('button', { class: 'danger', id: 'purge', onclick: attempt(async () => {
    await del(`${base}/contents`);
    replace(outcome, h('p', { role: 'status' }, 'Queue purged.'));
  }) }, 'Purge messages');
  const remove = h('button', { class: 'danger', id: 'delete', onclick: async () => {
    if (!confirm(`Delete queue ${name}?`)) return;
    try { await del(base); location.hash = '#/queues'; } catch (error) { replace(outcome, errorText(error)); }
  } }, 'Delete queue');
  return h('section', { class: 'card' }, h('h2', {}, 'Publish message'), publish, h('h2', {}, 'Get messages'), fetchForm,
    h('h2', {}, 'Purge and delete'), h('div', { class: 'toolbar' }, purge, remove));
}
