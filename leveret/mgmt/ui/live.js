// Live data for the pages: each watched path is polled while the tab is visible. When the
// management listener can stream (server-sent events), this is the one module to change.

import { get } from './api.js';

export const POLL_MS = Number(new URLSearchParams(location.search).get('poll_ms')) || 3000;

// Poll `path` (a string, or a function for paths that change with the page's state) and hand
// each answer to `onData`. The returned handle stops the polling or asks for an answer now.
export function watch(path, onData, onError = (error) => console.warn(error)) {
  let timer = null;
  let stopped = false;
  let running = false;
  async function tick() {
    clearTimeout(timer);
    if (stopped || running) return;
    running = true;
    try {
      if (document.visibilityState === 'visible') {
        await onData(await get(typeof path === 'function' ? path() : path));
      }
    } catch (error) {
      if (!stopped) onError(error);
    } finally {
      running = false;
      if (!stopped) timer = setTimeout(tick, POLL_MS);
    }
  }
  document.addEventListener('visibilitychange', tick);
  tick();
  return {
    refresh: tick,
    stop() {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', tick);
    },
  };
}
