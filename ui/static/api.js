// The one way the console reaches sbx: the public REST API under /api/v1,
// with the API key of this tab's session as a bearer token.

const KEY = 'sbx.apiKey';
const PROJECT = 'sbx.project'; // the project picked to act in, when not the key's

export const session = {
  key: () => sessionStorage.getItem(KEY),
  set: (k) => sessionStorage.setItem(KEY, k),
  project: () => sessionStorage.getItem(PROJECT),
  setProject: (id) => sessionStorage.setItem(PROJECT, id),
  clear: () => { sessionStorage.removeItem(KEY); sessionStorage.removeItem(PROJECT); },
};

// APIError is an answer other than 2xx: its status and the API's error
// envelope ({code, type, detail, errors: [{field, message}]}).
export class APIError extends Error {
  constructor(status, body) {
    super(body.detail || `HTTP ${status}`);
    this.status = status;
    this.type = body.type || '';
    this.detail = body.detail || '';
    this.fields = Array.isArray(body.errors) ? body.errors : [];
  }
}

export async function api(method, path, body, extra = {}) {
  const headers = { Accept: 'application/json', ...extra };
  const key = session.key();
  if (key) headers.Authorization = `Bearer ${key}`;
  const init = { method, headers };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(`/api/v1${path}`, init);
  } catch (e) {
    throw new APIError(0, { detail: `the server could not be reached (${e.message})` });
  }
  const text = await res.text();
  let data = {};
  try { data = text ? JSON.parse(text) : {}; } catch { data = { detail: text }; }
  if (!res.ok) throw new APIError(res.status, data);
  return data;
}

// pages fetches every page of a list route (at most max items) and
// answers their items.
export async function pages(path, max = 2000) {
  let items = [];
  let cursor = '';
  do {
    const q = new URLSearchParams({ limit: '200' });
    if (cursor) q.set('cursor', cursor);
    const r = await api('GET', `${path}${path.includes('?') ? '&' : '?'}${q}`);
    items = items.concat(r.items || []);
    cursor = r.next_cursor || '';
  } while (cursor && items.length < max);
  return items;
}

// stream sends a request whose answer is NDJSON and calls onLine with each
// line's value as it comes, until the answer ends or signal aborts it.
export async function stream(method, path, body, onLine, signal) {
  const headers = { Accept: 'application/x-ndjson' };
  const key = session.key();
  if (key) headers.Authorization = `Bearer ${key}`;
  const init = { method, headers, signal };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(`/api/v1${path}`, init);
  if (!res.ok) {
    let data = {};
    try { data = await res.json(); } catch { /* not the envelope */ }
    throw new APIError(res.status, data);
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) onLine(JSON.parse(line));
    }
  }
  if (buf.trim()) onLine(JSON.parse(buf));
}

// newKey is a random idempotency key (crypto.getRandomValues works on plain
// HTTP too, where crypto.randomUUID does not).
export function newKey() {
  return [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// raw sends a request whose body or answer is not JSON (a file's bytes) and
// returns the Response of a 2xx; another answer throws its APIError.
export async function raw(method, path, body, contentType) {
  const headers = {};
  const key = session.key();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (contentType) headers['Content-Type'] = contentType;
  let res;
  try {
    res = await fetch(`/api/v1${path}`, { method, headers, body });
  } catch (e) {
    throw new APIError(0, { detail: `the server could not be reached (${e.message})` });
  }
  if (!res.ok) {
    let data = {};
    try { data = await res.json(); } catch { /* not the envelope */ }
    throw new APIError(res.status, data);
  }
  return res;
}

// socket opens a WebSocket to a route under /api/v1 speaking protocol. A
// browser's WebSocket cannot carry an Authorization header, so the key is
// offered as the subprotocol sbx.key.<key>, which serve takes off the
// request (it never reaches the sandbox) and answers with protocol.
export function socket(path, protocol) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return new WebSocket(`${scheme}//${location.host}/api/v1${path}`, [protocol, `sbx.key.${session.key()}`]);
}
