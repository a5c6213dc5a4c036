// Connections and channels; an operator may close a connection.

import { del, seg } from './api.js';
import { errorText, fmtNumber, h, replace, table } from './dom.js';
import { watch } from './live.js';

export function render(view, _params, session) {
  const connections = h('div');
  const channels = h('div');
  const problem = h('div');
  replace(view, h('h1', {}, 'Connections'), problem, connections, h('h2', {}, 'Channels'), channels);
  const close = async (name) => {
    try { await del(`connections/${seg(name)}`); live.refresh(); } catch (error) { replace(problem, errorText(error)); }
  };
  const live = watch('connections', (items) => replace(connections, table([
    { title: 'Name', value: (c) => c.name }, { title: 'Node', value: (c) => c.node },
    { title: 'User', value: (c) => c.user }, { title: 'Virtual host', value: (c) => c.vhost },
    { title: 'State', value: (c) => c.state }, { title: 'Channels', value: (c) => fmtNumber(c.channels), num: true },
    { title: 'Protocol', value: (c) => c.protocol },
    { title: '', value: (c) => (session.can.change ? h('button', { class: 'danger', onclick: () => close(c.name) }, 'Close') : '') },
  ], items, { empty: 'No connections.' })), (error) => replace(problem, errorText(error)));
  const channelsLive = watch('channels', (items) => replace(channels, table([
    { title: 'Channel', value: (c) => c.name }, { title: 'Node', value: (c) => c.node },
    { title: 'User', value: (c) => c.user }, { title: 'Mode', value: (c) => [c.confirm && 'C', c.transactional && 'T'].filter(Boolean).join(' ') },
    { title: 'Prefetch', value: (c) => fmtNumber(c.prefetch_count), num: true },
    { title: 'Unacked', value: (c) => fmtNumber(c.messages_unacknowledged), num: true },
    { title: 'Consumers', value: (c) => fmtNumber(c.consumer_count), num: true },
  ], items, { empty: 'No channels.' })), (error) => replace(channels, errorText(error)));
  return () => { live.stop(); channelsLive.stop(); };
}
