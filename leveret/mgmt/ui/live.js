// Live data for the pages. All watches of a tab share one server-sent events stream (/api/live,
// a path parameter per watch) that brings each path's answer once a second; a watch polls its
// path instead while the stream is not open (it failed, or other tabs hold enough streams).
// fetch reads the stream rather than EventSource, which cannot send the Authorization header.

import { ApiError, authHeaders, get } from './api.js';

export const POLL_MS = Number(new URLSearchParams(location.search).get('poll_ms')) || 3000;
// A browser opens at most 6 HTTP/1.1 connections to a host, shared by its tabs: beyond this many
// streams (told apart over a BroadcastChannel), a tab polls, leaving connections for requests.
const MAX_STREAMS = 4;
const RETRY_MS = 15000;
// The paths the node streams, and those under them (LIVE_PATHS in leveret/mgmt/live.py); a watch
// of any other path polls.
const STREAMED = ['overview', 'queues', 'nodes', 'cluster/status', 'connections', 'channels', 'exchanges',
  'federation-links', 'parameters', 'policies', 'operator-policies', 'users', 'vhosts', 'permissions'];
const streamable = (path) => {
  const bare = path.split('?')[0];
  return STREAMED.some((p) => bare === p || bare.startsWith(`${p}/`));
};
const HEARTBEAT_MS = 1000;

const watches = new Set();
let stream = null; // {key, paths, controller, open}
let retryAt = 0;
let syncTimer = null;

const me = Math.random();
const peers = new Map(); // tab id -> {streaming, seen}
const channel = 'BroadcastChannel' in window ? new BroadcastChannel('leveret.live') : null;
if (channel) {
  channel.onmessage = ({ data }) => {
    peers.set(data.id, { streaming: data.streaming, seen: Date.now() });
    if (data.hello) announce();
  };
  setInterval(() => { announce(); sync(); }, HEARTBEAT_MS);
  channel.postMessage({ id: me, streaming: false, hello: true });
}

function announce() {
  if (channel) channel.postMessage({ id: me, streaming: stream !== null });
}

// Tabs with lower ids keep their streams when there are too many.
function mayStream() {
  const now = Date.now();
  const ahead = [...peers].filter(([id, p]) => p.streaming && now - p.seen < 3 * HEARTBEAT_MS && id < me);
  return ahead.length < MAX_STREAMS && Date.now() >= retryAt && document.visibilityState === 'visible';
}

const currentPath = (w) => (typeof w.path === 'function' ? w.path() : w.path);

function streaming(w) {
  return stream !== null && stream.open && stream.paths.includes(currentPath(w));
}

function deliver(answer) {
  for (const w of watches) {
    if (currentPath(w) !== answer.path) continue;
    if (answer.status === 200) w.take(answer.body);
    else w.fail(new ApiError(answer.status, answer.body));
  }
}

function close() {
  if (stream) stream.controller.abort();
  stream = null;
}

// Soon after a change (a watch added, stopped or pointed elsewhere), match the stream to it.
function sync() {
  clearTimeout(syncTimer);
  syncTimer = setTimeout(openStream, 200);
}

async function openStream() {
  const paths = [...new Set([...watches].map(currentPath).filter(streamable))];
  const key = paths.join('\n');
  if (!paths.length || !mayStream()) { close(); return; }
  if (stream && stream.key === key) return;
  close();
  const mine = { key, paths, controller: new AbortController(), open: false };
  stream = mine;
  try {
    const query = paths.map((p) => `path=${encodeURIComponent(p)}`).join('&');
    const response = await fetch(`/api/live?${query}`, { headers: authHeaders(), signal: mine.controller.signal });
    if (!response.ok) throw new ApiError(response.status, null);
    mine.open = true;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error('the stream ended');
      buffer += value;
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const data = buffer.slice(0, end).split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        buffer = buffer.slice(end + 2);
        if (data) deliver(JSON.parse(data));
      }
    }
  } catch (error) {
    if (stream !== mine) return; // replaced or closed on purpose
    // An older node, a proxy that holds the answer back, the node restarting: poll a while.
    stream = null;
    retryAt = Date.now() + RETRY_MS;
    announce();
  }
}

// Watch `path` (a string, or a function for paths that change with the page's state) and hand
// each answer to `onData`. The returned handle stops watching or asks for an answer now.
export function watch(path, onData, onError = (error) => console.warn(error)) {
  let timer = null;
  let stopped = false;
  let running = false;
  const w = {
    path,
    take: (body) => { if (!stopped) Promise.resolve(onData(body)).catch((e) => w.fail(e)); },
    fail: (error) => { if (!stopped) onError(error); },
  };
  // A poll: an answer now when asked (`force`) or while the stream does not bring them.
  async function tick(force) {
    clearTimeout(timer);
    if (stopped || running) return;
    running = true;
    try {
      if (document.visibilityState === 'visible' && (force === true || !streaming(w))) {
        await onData(await get(currentPath(w)));
      }
    } catch (error) {
      if (!stopped) onError(error);
    } finally {
      running = false;
      if (!stopped) timer = setTimeout(tick, POLL_MS);
    }
  }
  const visibility = () => { tick(true); sync(); };
  watches.add(w);
  document.addEventListener('visibilitychange', visibility);
  tick(true);
  sync();
  return {
    refresh() { tick(true); sync(); },
    stop() {
      stopped = true;
      clearTimeout(timer);
      watches.delete(w);
      document.removeEventListener('visibilitychange', visibility);
      sync();
    },
  };
}
