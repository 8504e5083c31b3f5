// OpenClaw Edge dashboard: the shell (router, header) and the helpers every
// page module uses. Pages are ES modules named after their route
// (#/chat → chat.js) exporting render(main, params) → optional cleanup.
// Everything talks to the control API (/v1/…) on this origin; text from
// the gateway is always put in the page as text, never as HTML.

export class APIError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

let revoked = false;

async function failure(res) {
  let code = 'http_' + res.status, message = res.status + ' ' + res.statusText;
  const ct = res.headers.get('Content-Type') || '';
  if (ct.includes('json')) {
    try { const e = await res.json(); code = e.code || code; message = e.message || message; } catch { /* keep the status line */ }
  } else if (res.status === 401) {
    code = 'signed_out'; message = 'This dashboard session ended. Run `openclaw dashboard` again for a new link.';
  }
  const err = new APIError(res.status, code, message);
  if (code === 'not_paired' || code === 'signed_out') {
    revoked = true;
    banner(code === 'not_paired' ? 'This device is no longer paired with the gateway (it was revoked). Pair it again with `openclaw pair`.' : message);
  }
  return err;
}

// auth is the session secret `openclaw dashboard` gave this origin at
// sign-in (its /auth page keeps it in localStorage, which no other port of
// 127.0.0.1 can read), sent on every API call.
export function auth(path) {
  const secret = localStorage.getItem('openclaw-dashboard');
  return secret && String(path).startsWith('/v1/') ? { 'X-OpenClaw-Dashboard': secret } : {};
}

// download fetches an API answer with the session secret and saves it as
// name (a plain link could not carry the secret).
export async function download(path, query, name) {
  const res = await request('GET', path, { query, raw: true });
  const a = h('a', { href: URL.createObjectURL(await res.blob()), download: name });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function url(path, query) {
  const u = new URL(path, location.origin);
  for (const [k, v] of Object.entries(query || {})) if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, v);
  return u.pathname + u.search;
}

// request sends one API call and returns the decoded JSON (or the Response
// when raw is set). A non-2xx answer throws APIError.
export async function request(method, path, { query, body, raw, signal, headers, contentType } = {}) {
  const init = { method, signal, headers: { ...(headers || {}), ...auth(path) }, credentials: 'omit' };
  if (body !== undefined) {
    if (body instanceof Blob || body instanceof ArrayBuffer || ArrayBuffer.isView(body)) {
      init.body = body; init.headers['Content-Type'] = contentType || 'application/octet-stream';
    } else { init.body = JSON.stringify(body); init.headers['Content-Type'] = 'application/json'; }
  }
  const res = await fetch(url(path, query), init);
  if (!res.ok) throw await failure(res);
  if (raw) return res;
  const ct = res.headers.get('Content-Type') || '';
  return ct.includes('json') ? res.json() : res.text();
}
export const get = (path, query, opts) => request('GET', path, { ...opts, query });
export const post = (path, body, query, opts) => request('POST', path, { ...opts, body, query });

// stream sends a request whose answer is Server-Sent Events and calls
// onEvent(name, data) for each; it resolves when the stream ends.
export async function stream(method, path, { query, body, signal, onEvent }) {
  const res = await request(method, path, { query, body, signal, raw: true, headers: { Accept: 'text/event-stream' } });
  const ct = res.headers.get('Content-Type') || '';
  if (!ct.includes('event-stream')) { onEvent('result', ct.includes('json') ? await res.json() : await res.text()); return; }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true }).replace(/\r\n/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i); buf = buf.slice(i + 2);
      let name = 'message', data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) name = line.slice(6).trim();
        else if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(5).replace(/^ /, '');
      }
      if (!data) continue;
      let v = data; try { v = JSON.parse(data); } catch { /* plain text */ }
      onEvent(name, v);
    }
  }
}

// h builds an element: h('button', {class: 'x', onclick: f}, 'text', child…).
// Strings become text nodes, so gateway text can never become markup.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value' || k === 'checked' || k === 'disabled') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// table renders rows (objects) with columns [{label, get(row) → node|string, opt}].
export function table(columns, rows, empty = 'Nothing yet.') {
  if (!rows.length) return h('p', { class: 'muted' }, empty);
  return h('table', {},
    h('thead', {}, h('tr', {}, columns.map(c => h('th', { class: c.opt ? 'opt' : null }, c.label)))),
    h('tbody', {}, rows.map(r => h('tr', {}, columns.map(c => h('td', { class: c.opt ? 'opt' : null }, c.get(r)))))));
}

export function toast(msg, kind) {
  const t = h('div', { class: 'toast' + (kind === 'error' ? ' error' : ''), role: kind === 'error' ? 'alert' : 'status' }, msg);
  document.getElementById('toasts').append(t);
  setTimeout(() => t.remove(), kind === 'error' ? 8000 : 4000);
}

// showError puts an error in the page (and a toast) in words a person reads.
export function showError(err, where) {
  const msg = err instanceof APIError ? err.message : String(err && err.message || err);
  if (err && err.name === 'AbortError') return;
  toast(msg, 'error');
  if (where) where.replaceChildren(h('p', { class: 'err', role: 'alert' }, msg));
}

export function banner(msg) {
  const b = document.getElementById('banner');
  b.textContent = msg; b.hidden = !msg;
}

export const when = t => t ? new Date(t).toLocaleString() : '';
export const bytes = n => n >= 1 << 30 ? (n / (1 << 30)).toFixed(1) + ' GiB' : n >= 1 << 20 ? (n / (1 << 20)).toFixed(1) + ' MiB' : n >= 1024 ? (n / 1024).toFixed(0) + ' KiB' : (n || 0) + ' B';

// busy disables a button while fn runs and reports its failure.
export async function busy(btn, fn) {
  btn.disabled = true;
  try { return await fn(); } catch (e) { showError(e); } finally { btn.disabled = false; }
}

export const role = { value: 'operator' };

// status is the gateway's status, asked once per page load and shared by
// the shell and the first page (a page that wants it fresh asks get()).
let statusOnce = null;
export function status() {
  if (!statusOnce) { statusOnce = get('/v1/status'); statusOnce.catch(() => { statusOnce = null; }); }
  return statusOnce;
}

const pages = ['chat', 'sessions', 'channels', 'devices', 'models', 'memory', 'logs', 'status', 'config', 'onboard'];
let cleanup = null;

async function route() {
  const [name, ...rest] = (location.hash.replace(/^#\/?/, '') || 'chat').split('/');
  const page = pages.includes(name) ? name : 'chat';
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === '#/' + page) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  document.getElementById('nav').classList.remove('open');
  if (cleanup) { try { cleanup(); } catch { /* a page's own */ } cleanup = null; }
  const main = document.getElementById('main');
  main.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
  try {
    const mod = await import('./' + page + '.js');
    main.replaceChildren();
    cleanup = (await mod.render(main, rest.map(decodeURIComponent))) || null;
    statusOnce = null; // later pages ask afresh
  } catch (e) {
    // A page's module that cannot load may mean the gateway refuses this
    // device now (revoked): ask, so the banner says so.
    if (!(e instanceof APIError)) { try { await get('/v1/whoami'); } catch { /* failure() set the banner */ } }
    showError(e, main);
  }
}

async function start() {
  document.getElementById('menu').addEventListener('click', e => {
    const open = document.getElementById('nav').classList.toggle('open');
    e.currentTarget.setAttribute('aria-expanded', String(open));
  });
  window.addEventListener('hashchange', route);
  // Both at once: each is a round trip to the box.
  const st = status();
  try {
    const me = await get('/v1/whoami');
    role.value = me.device ? me.device.role : 'operator';
    const who = (me.gatewayName || 'gateway') + ' · ' + (me.device ? me.device.name + ' (' + me.device.role + ')' : 'this box');
    document.getElementById('who').textContent = who;
  } catch (e) { if (!revoked) showError(e); }
  if (!location.hash) {
    // A box with no model at all starts at the onboarding steps.
    try {
      const st = await status();
      // (The built-in default is a local model that is not installed yet.)
      if (!st.model || (st.missingModels || []).some(m => (m.ref || m.model || m) === st.model)) { location.hash = '#/onboard'; return route(); }
    } catch { /* the chat page will say what is wrong */ }
  }
  route();
}

start();
