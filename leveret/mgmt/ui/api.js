// The HTTP API as the UI calls it: basic auth from the login form, JSON in and out.

const AUTH_KEY = 'leveret.auth';

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.reason ? String(body.reason) : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export function setCredentials(user, password) {
  sessionStorage.setItem(AUTH_KEY, btoa(unescape(encodeURIComponent(`${user}:${password}`))));
}

export function clearCredentials() {
  sessionStorage.removeItem(AUTH_KEY);
}

export function hasCredentials() {
  return sessionStorage.getItem(AUTH_KEY) !== null;
}

// A path segment: vhost "/" travels as %2F, as the API expects.
export const seg = (text) => encodeURIComponent(text);

// x-requested-with: the node then refuses bad credentials without a basic-auth challenge,
// which would open the browser's own password dialog.
export const authHeaders = () => ({
  authorization: `Basic ${sessionStorage.getItem(AUTH_KEY) || ''}`,
  'x-requested-with': 'XMLHttpRequest',
});

export async function request(method, path, body) {
  const headers = authHeaders();
  const init = { method, headers };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`/api/${path}`, init);
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = { reason: text }; }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

export const get = (path) => request('GET', path);
export const put = (path, body) => request('PUT', path, body);
export const post = (path, body) => request('POST', path, body);
export const del = (path, body) => request('DELETE', path, body);
