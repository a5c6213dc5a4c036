// Queues: one page of the server's sorted, filtered list at a time (fine with 10,000 queues).

import { put, seg } from './api.js';
import { dig, errorText, fmtNumber, fmtRate, formValues, h, link, replace } from './dom.js';
import { watch } from './live.js';

const COLUMNS = [
  { title: 'Virtual host', field: 'vhost' },
  { title: 'Name', field: 'name', value: (q) => link(`#/queue/${seg(q.vhost)}/${seg(q.name)}`, q.name) },
  { title: 'Node', field: 'node' },
  { title: 'Type', field: 'type' },
  { title: 'Policy', field: 'policy' },
  { title: 'State', field: 'state' },
  { title: 'Consumers', field: 'consumers', num: true },
  { title: 'Ready', field: 'messages_ready', num: true },
  { title: 'Unacked', field: 'messages_unacknowledged', num: true },
  { title: 'Total', field: 'messages', num: true },
  { title: 'Incoming', field: 'message_stats.publish_details.rate', num: true, rate: true },
  { title: 'Deliver/get', field: 'message_stats.deliver_get_details.rate', num: true, rate: true },
  { title: 'Ack', field: 'message_stats.ack_details.rate', num: true, rate: true },
];

export function render(view, _params, session) {
  const state = { page: 1, pageSize: 100, name: '', regex: false, sort: 'name', reverse: false };
  const body = h('tbody');
  const head = h('tr');
  const summary = h('span', { class: 'muted', id: 'queue-count' });
  const pager = h('span');
  const problem = h('div');
  const path = () => {
    const query = new URLSearchParams({
      page: state.page, page_size: state.pageSize, name: state.name, use_regex: state.regex,
      sort: state.sort, sort_reverse: state.reverse, columns: COLUMNS.map((c) => c.field).join(','),
    });
    return `queues?${query}`;
  };
  const drawHead = () => replace(head, COLUMNS.map((c) => h('th', {
    class: `sortable ${c.num ? 'num' : ''} ${state.sort === c.field ? 'sorted' : ''} ${state.sort === c.field && state.reverse ? 'reverse' : ''}`,
    onclick: () => {
      state.reverse = state.sort === c.field ? !state.reverse : false;
      state.sort = c.field;
      drawHead();
      live.refresh();
    },
  }, c.title)));
  const go = (page) => { state.page = page; live.refresh(); };
  const filter = h('input', { type: 'search', placeholder: 'Filter by name', 'aria-label': 'filter', oninput: () => {
    state.name = filter.value;
    state.page = 1;
    live.refresh();
  } });
  const regex = h('input', { type: 'checkbox', onchange: () => { state.regex = regex.checked; live.refresh(); } });
  const size = h('select', { 'aria-label': 'page size', onchange: () => { state.pageSize = Number(size.value); state.page = 1; live.refresh(); } },
    [20, 100, 500].map((n) => h('option', { value: n, selected: n === state.pageSize }, n)));
  drawHead();
  replace(view, h('h1', {}, 'Queues'), problem,
    h('div', { class: 'toolbar' }, filter, h('label', {}, regex, ' regex'), 'Page size', size, pager, summary),
    h('table', { id: 'queues' }, h('thead', {}, head), body),
    session.can.change ? addForm(() => live.refresh(), problem) : null);
  const live = watch(path, (answer) => {
    replace(problem);
    replace(summary, `${fmtNumber(answer.filtered_count)} of ${fmtNumber(answer.total_count)} queues`);
    replace(pager,
      h('button', { class: 'plain', 'aria-label': 'previous page', disabled: answer.page <= 1, onclick: () => go(answer.page - 1) }, '‹'),
      ` page ${answer.page} of ${Math.max(1, answer.page_count)} `,
      h('button', { class: 'plain', 'aria-label': 'next page', disabled: answer.page >= answer.page_count, onclick: () => go(answer.page + 1) }, '›'));
    replace(body, answer.items.map((q) => h('tr', { 'data-queue': q.name }, COLUMNS.map((c) => {
      const value = c.value ? c.value(q) : dig(q, c.field);
      return h('td', { class: c.num ? 'num' : '' }, c.rate ? fmtRate(value) : value instanceof Node ? value : fmtNumber(value));
    }))));
  }, (error) => replace(problem, errorText(error)));
  return () => live.stop();
}

function addForm(refresh, problem) {
  const form = h('form', { class: 'inline', id: 'add-queue', onsubmit: async (event) => {
    event.preventDefault();
    const values = formValues(form);
    try {
      await put(`queues/${seg(values.vhost)}/${seg(values.name)}`, { durable: values.durable === 'true', auto_delete: false, arguments: {} });
      form.reset();
      refresh();
    } catch (error) { replace(problem, errorText(error)); }
  } },
  h('label', {}, 'Virtual host', h('input', { name: 'vhost', value: '/' })),
  h('label', {}, 'Name', h('input', { name: 'name', required: true })),
  h('label', {}, 'Durability', h('select', { name: 'durable' }, h('option', { value: 'true' }, 'durable'), h('option', { value: 'false' }, 'transient'))),
  h('button', { type: 'submit' }, 'Add queue'));
  return h('section', { class: 'card' }, h('h2', {}, 'Add a queue'), form);
}
