// Overview: totals, live message-rate and queue-length charts, node health, listeners.

import { ageQuery, gaugePoints, lineChart, periodPicker, ratePoints } from './chart.js';
import { badge, errorText, fmtBytes, fmtNumber, fmtRate, h, replace, table } from './dom.js';
import { watch } from './live.js';

export const RATE_SERIES = [
  ['publish', 'Published'], ['deliver_get', 'Delivered'], ['ack', 'Acknowledged'], ['redeliver', 'Redelivered'],
];
export const LENGTH_SERIES = [['messages_ready', 'Ready'], ['messages_unacknowledged', 'Unacked']];

// Both charts for a figure set: `stats` holds message_stats, `lengths` the queue lengths.
export function charts(stats, lengths) {
  const rates = RATE_SERIES.map(([name, label]) => ({
    label, points: ratePoints(stats[`${name}_details`]), current: fmtNumber((stats[`${name}_details`] || {}).rate ?? 0),
  }));
  const sizes = LENGTH_SERIES.map(([name, label]) => ({
    label, points: gaugePoints(lengths[`${name}_details`]), current: fmtNumber(lengths[name] ?? 0),
  }));
  return h('div', { class: 'totals' },
    h('section', { class: 'card', 'data-chart': 'rates' }, h('h2', {}, 'Message rates'), lineChart(rates, { unit: '/s' })),
    h('section', { class: 'card', 'data-chart': 'lengths' }, h('h2', {}, 'Queued messages'), lineChart(sizes)));
}

export function nodeHealth(node) {
  if (!node.running) return badge('down', 'bad');
  const alarms = [node.mem_alarm && 'memory alarm', node.disk_free_alarm && 'disk alarm'].filter(Boolean);
  return alarms.length ? badge(alarms.join(', '), 'bad') : badge('running', 'good');
}

export function render(view) {
  let period = '1 min';
  const totals = h('div', { class: 'totals', id: 'totals' });
  const chartArea = h('div');
  const nodesArea = h('div');
  const listenersArea = h('div');
  const problem = h('div');
  replace(view, h('h1', {}, 'Overview'), problem, totals,
    h('div', { class: 'toolbar' }, 'Charts over', periodPicker(period, (p) => { period = p; live.refresh(); })),
    chartArea, h('h2', {}, 'Nodes'), nodesArea, h('h2', {}, 'Listeners'), listenersArea);
  const live = watch(() => `overview?${ageQuery(period)}`, (o) => {
    replace(problem);
    const objects = o.object_totals || {};
    const queued = o.queue_totals || {};
    replace(totals, [
      ['Connections', objects.connections], ['Channels', objects.channels], ['Exchanges', objects.exchanges],
      ['Queues', objects.queues], ['Consumers', objects.consumers], ['Ready', queued.messages_ready],
      ['Unacked', queued.messages_unacknowledged],
      ['Publish rate', fmtRate(((o.message_stats || {}).publish_details || {}).rate ?? 0)],
    ].map(([label, value]) => h('div', { class: 'total', 'data-total': label }, h('b', {}, fmtNumber(value ?? 0)), label)));
    replace(chartArea, charts(o.message_stats || {}, queued));
    replace(listenersArea, table([
      { title: 'Node', value: (l) => l.node }, { title: 'Protocol', value: (l) => l.protocol },
      { title: 'Address', value: (l) => l.ip_address }, { title: 'Port', value: (l) => l.port, num: true },
    ], o.listeners || []));
  }, (error) => replace(problem, errorText(error)));
  const nodes = watch('nodes', (list) => replace(nodesArea, table([
    { title: 'Name', value: (n) => n.name }, { title: 'State', value: nodeHealth },
    { title: 'Raft', value: (n) => (n.cluster && n.cluster.raft ? `${n.cluster.raft.role} (term ${n.cluster.raft.term})` : '') },
    { title: 'Memory', value: (n) => fmtBytes(n.mem_used), num: true },
    { title: 'Disk free', value: (n) => fmtBytes(n.disk_free), num: true },
    { title: 'Uptime', value: (n) => (n.uptime ? `${Math.round(n.uptime / 1000)} s` : ''), num: true },
  ], list)), (error) => replace(nodesArea, errorText(error)));
  return () => { live.stop(); nodes.stop(); };
}
