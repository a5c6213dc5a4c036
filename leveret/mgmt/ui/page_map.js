// The cluster map: each node with the queues it homes, its connections and consumers; arrows for
// consumers on one node of queues homed on another, and for federation links to upstreams.

import { errorText, h, replace } from './dom.js';
import { get } from './api.js';
import { watch } from './live.js';
import { nodeIsUp } from './page_nodes.js';

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, text) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, value);
  if (text !== undefined) element.textContent = text;
  return element;
}

// Counts per node and the flows between them, from the API's lists. Each node gossips how many
// consumers of its queues each node's clients hold (cluster.consumer_flows), so flows between two
// nodes show whichever node serves the page; the serving node's consumer list stands in for a
// node that reported none.
export function layout(nodes, connections, consumers, links, gossip) {
  const homes = new Map(); // "vhost/name" -> node
  const byNode = new Map(nodes.map((n) => [n.name, { node: n, up: nodeIsUp(n, gossip), queues: 0, connections: 0, consumers: 0 }]));
  for (const n of nodes) {
    for (const q of (n.cluster || {}).queue_counters || []) {
      homes.set(`${q.vhost}/${q.name}`, n.name);
      byNode.get(n.name).queues += 1;
    }
  }
  for (const c of connections) if (byNode.has(c.node)) byNode.get(c.node).connections += 1;
  const flows = new Map(); // "from>to" -> consumers
  const add = (home, at, count) => {
    if (byNode.has(at)) byNode.get(at).consumers += count;
    if (at && home && at !== home) flows.set(`${home}>${at}`, (flows.get(`${home}>${at}`) || 0) + count);
  };
  const reporting = new Set(nodes.filter((n) => (n.cluster || {}).consumer_flows).map((n) => n.name));
  for (const n of nodes) {
    for (const [at, count] of Object.entries((n.cluster || {}).consumer_flows || {})) add(n.name, at, count);
  }
  for (const c of consumers) {
    const home = homes.get(`${(c.queue || {}).vhost}/${(c.queue || {}).name}`);
    if (!reporting.has(home)) add(home, (c.channel_details || {}).node, 1);
  }
  return { byNode, flows, links };
}

function draw({ byNode, flows, links }) {
  const width = 720;
  const height = 420;
  const names = [...byNode.keys()].sort();
  const centre = [width / 2 - 80, height / 2];
  const radius = names.length > 1 ? 140 : 0;
  const at = new Map(names.map((name, i) => {
    const angle = (2 * Math.PI * i) / names.length - Math.PI / 2;
    return [name, [centre[0] + radius * Math.cos(angle), centre[1] + radius * Math.sin(angle)]];
  }));
  const root = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, id: 'cluster-map' });
  root.append(svg('defs', {}));
  root.firstChild.innerHTML = '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z" fill="#6b7380"/></marker>';
  for (const [key, count] of flows) {
    const [from, to] = key.split('>').map((name) => at.get(name));
    if (!from || !to) continue;
    root.append(svg('line', { x1: from[0], y1: from[1], x2: to[0], y2: to[1], stroke: '#6b7380', 'stroke-width': 1 + Math.log2(1 + count), 'marker-end': 'url(#arrow)', 'data-flow': key }));
    root.append(svg('text', { x: (from[0] + to[0]) / 2, y: (from[1] + to[1]) / 2 - 4, 'font-size': 11 }, `${count} consumer${count > 1 ? 's' : ''}`));
  }
  const upstreams = [...new Set(links.map((l) => l.upstream))];
  upstreams.forEach((upstream, i) => {
    const y = 40 + i * 50;
    root.append(svg('rect', { x: width - 150, y: y - 16, width: 140, height: 30, rx: 4, fill: '#fff', stroke: '#8e44ad' }));
    root.append(svg('text', { x: width - 80, y: y + 4, 'text-anchor': 'middle', 'font-size': 11 }, `upstream ${upstream}`));
    for (const l of links.filter((x) => x.upstream === upstream)) {
      const from = at.get(l.node);
      if (!from) continue;
      root.append(svg('line', { x1: width - 150, y1: y, x2: from[0], y2: from[1], stroke: l.status === 'running' ? '#8e44ad' : '#c0392b', 'stroke-dasharray': '5 4', 'marker-end': 'url(#arrow)', 'data-link': l.id }));
    }
  });
  for (const [name, info] of byNode) {
    const [x, y] = at.get(name);
    const group = svg('g', { 'data-node': name, 'data-state': info.up ? 'up' : 'down' });
    group.append(svg('circle', { cx: x, cy: y, r: 48, fill: info.up ? '#eaf6ef' : '#fdecea', stroke: info.up ? '#2e8b57' : '#c0392b', 'stroke-width': 2 }));
    group.append(svg('text', { x, y: y - 18, 'text-anchor': 'middle', 'font-weight': 700, 'font-size': 12 }, name.split('@')[0]));
    group.append(svg('text', { x, y: y, 'text-anchor': 'middle', 'font-size': 11 }, `${info.queues} queues`));
    group.append(svg('text', { x, y: y + 14, 'text-anchor': 'middle', 'font-size': 11 }, `${info.connections} conns`));
    group.append(svg('text', { x, y: y + 28, 'text-anchor': 'middle', 'font-size': 11 }, `${info.consumers} consumers`));
    root.append(group);
  }
  return root;
}

export function render(view) {
  const area = h('section', { class: 'card' });
  replace(view, h('h1', {}, 'Cluster map'), h('p', { class: 'muted' },
    'Circles are nodes with the queues they home; solid arrows run from a queue\'s home node to the node its consumers are connected to; dashed arrows are federation links from their upstreams.'), area);
  const live = watch('nodes', async (nodes) => {
    const [connections, consumers, links, status] = await Promise.all([
      get('connections?columns=name,node'), get('consumers'), get('federation-links'), get('cluster/status').catch(() => ({})),
    ]);
    replace(area, draw(layout(nodes, connections, consumers, links, status.gossip)));
  }, (error) => replace(area, errorText(error)));
  return () => live.stop();
}
