// Logs: the gateway's log, followed live (GET /v1/logs?follow=1 answers
// plain text lines as they are written). Pause holds new lines back
// without losing them; the level filter hides quieter lines; at most
// MAX lines are kept.
import { h, request, showError } from './app.js';

const MAX = 2000;
const levels = ['DEBUG', 'INFO', 'WARN', 'ERROR'];

// levelOf reads slog's level=… (text handler); a line without one (a
// continuation, the "… skipped" note) has no level and always shows.
function levelOf(line) {
  const m = /(?:^|\s)level=([A-Za-z]+)/.exec(line);
  if (!m) return -1;
  const i = levels.indexOf(m[1].toUpperCase());
  return i < 0 ? -1 : i;
}

export async function render(main) {
  const ctrl = new AbortController();
  const view = h('div', { id: 'logs-view', class: 'logview', role: 'log', tabindex: 0, 'aria-label': 'Gateway log' });
  const pause = h('button', { id: 'logs-pause', 'aria-pressed': 'false' }, 'Pause');
  const level = h('select', { id: 'logs-level', 'aria-label': 'Lowest level shown' },
    levels.map(l => h('option', { value: l, selected: l === 'INFO' }, l.toLowerCase() + ' and above')));
  const text = h('input', { type: 'search', id: 'logs-filter', placeholder: 'Filter text', 'aria-label': 'Show only lines containing' });
  const auto = h('input', { type: 'checkbox', id: 'logs-autoscroll', checked: true });
  const clear = h('button', { id: 'logs-clear' }, 'Clear');
  const state = h('span', { id: 'logs-state', class: 'muted', role: 'status' }, 'connecting…');
  main.append(h('h1', {}, 'Logs'),
    h('div', { class: 'row' }, pause, level, text, h('label', {}, auto, ' follow the end'), clear, state), view);

  let paused = false, held = [];

  function visible(el) {
    const min = levels.indexOf(level.value), q = text.value.toLowerCase();
    const lv = Number(el.dataset.level);
    return (lv < 0 || lv >= min) && (!q || el.textContent.toLowerCase().includes(q));
  }
  function show(lines) {
    const frag = document.createDocumentFragment();
    for (const line of lines) {
      const lv = levelOf(line);
      const el = h('div', { class: 'line' + (lv >= 2 ? ' ' + levels[lv].toLowerCase() : ''), 'data-level': lv }, line);
      el.hidden = !visible(el);
      frag.append(el);
    }
    view.append(frag);
    const extra = view.childElementCount - MAX;
    for (let i = 0; i < extra; i++) view.firstElementChild.remove();
    if (auto.checked) view.scrollTop = view.scrollHeight;
  }
  function add(lines) {
    if (!lines.length) return;
    if (paused) { held.push(...lines); if (held.length > MAX) held = held.slice(-MAX); state.textContent = 'paused, ' + held.length + ' new lines held'; return; }
    show(lines);
  }
  function refilter() {
    for (const el of view.children) el.hidden = !visible(el);
    if (auto.checked) view.scrollTop = view.scrollHeight;
  }

  // follow reads the log until the page is left, reconnecting (without
  // the tail again) when the gateway restarts or the connection drops.
  async function follow() {
    let lines = 200, wait = 1000;
    while (!ctrl.signal.aborted) {
      try {
        const res = await request('GET', '/v1/logs', { query: { lines, follow: 1 }, raw: true, signal: ctrl.signal });
        state.textContent = paused ? state.textContent : 'following';
        wait = 1000; lines = 0;
        const reader = res.body.getReader(), dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          const parts = buf.split('\n');
          buf = parts.pop();
          add(parts.filter(l => l !== ''));
        }
        if (buf) add([buf]);
        if (!paused) state.textContent = 'the log ended (the gateway stopped?): reconnecting…';
      } catch (e) {
        if (e.name === 'AbortError') return;
        if (e.code === 'not_found' || e.status === 403) { showError(e); state.textContent = e.message; return; }
        state.textContent = 'disconnected (' + e.message + '): reconnecting…';
      }
      await new Promise(r => setTimeout(r, wait));
      wait = Math.min(wait * 2, 15000);
    }
  }

  pause.addEventListener('click', () => {
    paused = !paused;
    pause.textContent = paused ? 'Resume' : 'Pause';
    pause.setAttribute('aria-pressed', String(paused));
    if (!paused) { const lines = held; held = []; show(lines); state.textContent = 'following'; } else state.textContent = 'paused';
  });
  level.addEventListener('change', refilter);
  text.addEventListener('input', refilter);
  auto.addEventListener('change', () => { if (auto.checked) view.scrollTop = view.scrollHeight; });
  clear.addEventListener('click', () => view.replaceChildren());
  // Scrolling up by hand stops following the end; back at the end, it follows again.
  view.addEventListener('scroll', () => { auto.checked = view.scrollTop + view.clientHeight >= view.scrollHeight - 4; });

  follow();
  return () => ctrl.abort();
}
