// The cluster's nodes: health, Raft role and term, gossip state; a lost node turns red.

import { badge, errorText, fmtBytes, fmtNumber, h, replace } from './dom.js';
import { watch } from './live.js';

export function nodeIsUp(node, gossip) {
  const heard = gossip && gossip[node.name];
  return node.running !== false && (!heard || heard.status === 'alive');
}

export function render(view) {
  const area = h('div', { class: 'nodes', id: 'node-cards' });
  const raft = h('p', { class: 'muted' });
  replace(view, h('h1', {}, 'Nodes'), raft, area);
  let status = {};
  const statusLive = watch('cluster/status', (s) => {
    status = s;
    const r = s.raft || {};
    replace(raft, `Cluster ${s.cluster_name}: leader ${r.leader || 'none'}, term ${r.term ?? ''}, commit index ${r.commit_index ?? ''}`);
  }, () => {});
  const live = watch('nodes', (nodes) => replace(area, nodes.map((n) => {
    const up = nodeIsUp(n, status.gossip);
    const cluster = n.cluster || {};
    const r = cluster.raft || {};
    const alarms = [n.mem_alarm && 'memory', n.disk_free_alarm && 'disk', ...(cluster.alarms || [])].filter(Boolean);
    return h('div', { class: `node ${up ? '' : 'down'}`, 'data-node': n.name, 'data-state': up ? 'up' : 'down' },
      h('h3', {}, n.name, ' ', up ? badge('up', 'good') : badge('down', 'bad')),
      h('div', {}, `Raft: ${r.role || (cluster.leader ? 'leader' : cluster.voter ? 'voter' : '?')}${r.term !== undefined ? `, term ${r.term}` : ''}`),
      h('div', {}, `Gossip: ${(cluster.gossip || (status.gossip || {})[n.name] || {}).status || 'unknown'}`),
      h('div', {}, `Address: ${cluster.address || ''}`),
      h('div', {}, `Queues homed: ${fmtNumber((cluster.queue_counters || []).length)}`),
      n.mem_used !== undefined ? h('div', {}, `Memory: ${fmtBytes(n.mem_used)}, disk free: ${fmtBytes(n.disk_free)}`) : null,
      alarms.length ? h('div', {}, badge(`alarms: ${alarms.join(', ')}`, 'bad')) : null);
  })), (error) => replace(area, errorText(error)));
  return () => { live.stop(); statusLive.stop(); };
}
