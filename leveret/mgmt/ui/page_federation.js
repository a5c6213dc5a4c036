// Federation: upstreams (parameters) and the links with their status.

import { badge, errorText, h, replace, table } from './dom.js';
import { watch } from './live.js';

const STATUS_KIND = { running: 'good', starting: 'warn', error: 'bad', shutdown: 'bad' };

export function render(view) {
  const upstreams = h('div');
  const links = h('div', { id: 'links' });
  replace(view, h('h1', {}, 'Federation'), h('h2', {}, 'Upstreams'), upstreams, h('h2', {}, 'Links'), links);
  const u = watch('parameters/federation-upstream', (items) => replace(upstreams, table([
    { title: 'Virtual host', value: (p) => p.vhost }, { title: 'Name', value: (p) => p.name },
    { title: 'URI', value: (p) => String((p.value || {}).uri || '').replace(/\/\/[^@/]*@/, '//***@') },
    { title: 'Queue', value: (p) => (p.value || {}).queue || '' },
  ], items, { empty: 'No upstreams.' })), (error) => replace(upstreams, errorText(error)));
  const l = watch('federation-links', (items) => replace(links, table([
    { title: 'Node', value: (x) => x.node }, { title: 'Virtual host', value: (x) => x.vhost },
    { title: 'Queue', value: (x) => x.queue }, { title: 'Upstream', value: (x) => x.upstream },
    { title: 'Status', value: (x) => badge(x.status, STATUS_KIND[x.status]) },
    { title: 'Demand', value: (x) => x.demand || '' }, { title: 'Error', value: (x) => x.error || '' },
    { title: 'Since', value: (x) => x.timestamp },
  ], items, { empty: 'No federation links.' })), (error) => replace(links, errorText(error)));
  return () => { u.stop(); l.stop(); };
}
