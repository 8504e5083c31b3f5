// Sessions: every session the gateway keeps, with a filter over key and
// name; per row a link into the chat, the history shown inline, an export
// (OpenClaw JSONL), a reset (the old transcript stays, exportable by id)
// and a delete (the session and its transcript, for good). Reset and
// delete are for operators and ask first.
import { h, get, post, table, toast, showError, busy, when, role, download } from './app.js';
import { escapeControl } from './escape.js';

function blocksText(content) {
  if (typeof content === 'string') return content;
  return (content || []).filter(b => b.type === 'text').map(b => b.text).join('');
}

// historyView renders a transcript's entries the way the chat page does.
export function historyView(entries) {
  const log = h('div', { class: 'log history' });
  for (const e of entries || []) {
    if (e.type !== 'message' || !e.message) continue;
    const m = e.message;
    if (m.role === 'user') log.append(h('div', { class: 'msg user' }, blocksText(m.content)));
    else if (m.role === 'assistant') {
      const text = blocksText(m.content);
      if (text) log.append(h('div', { class: 'msg assistant' }, text));
      for (const b of m.content || []) if (b.type === 'toolCall') log.append(h('div', { class: 'msg tool' }, '⚙ ' + b.name + ' ' + JSON.stringify(b.arguments || {})));
    } else if (m.role === 'toolResult') {
      log.append(h('div', { class: 'msg tool' }, '↳ ' + (m.toolName || 'tool') + (m.isError ? ' (error)' : '') + ': ' + blocksText(m.content).slice(0, 300)));
    }
  }
  if (!log.childElementCount) log.append(h('div', { class: 'msg note' }, 'No messages yet.'));
  return log;
}

// A file name for the export: the key without what a file system dislikes.
const fileName = key => key.replace(/[^A-Za-z0-9._-]+/g, '_') + '.jsonl';

export async function render(main) {
  const writer = role.value !== 'viewer';
  const filter = h('input', { type: 'search', id: 'sessions-filter', placeholder: 'Filter by key or name', 'aria-label': 'Filter sessions by key or name' });
  const refresh = h('button', { id: 'sessions-refresh' }, 'Refresh');
  const list = h('div', { id: 'sessions-list' });
  const count = h('span', { class: 'muted', id: 'sessions-count', 'aria-live': 'polite' });
  main.append(h('h1', {}, 'Sessions'), h('div', { class: 'row' }, filter, refresh, count), list);
  let sessions = [];

  async function toggleHistory(btn, s, tr) {
    const next = tr.nextElementSibling;
    if (next && next.classList.contains('history-row')) {
      next.remove(); btn.setAttribute('aria-expanded', 'false'); btn.textContent = 'History'; return;
    }
    await busy(btn, async () => {
      const cell = h('td', { colspan: tr.children.length });
      const row = h('tr', { class: 'history-row', 'data-key': s.key }, cell);
      try {
        const hist = await get('/v1/sessions/history', { key: s.key });
        cell.append(historyView(hist.entries));
      } catch (e) {
        if (e.code === 'not_found') cell.append(h('p', { class: 'muted' }, e.message)); else { showError(e, cell); }
      }
      tr.after(row);
      btn.setAttribute('aria-expanded', 'true'); btn.textContent = 'Hide history';
    });
  }

  async function reset(btn, s) {
    if (!confirm('Reset session ' + escapeControl(s.key) + '? It starts over with an empty history; the old transcript stays in the store and can still be exported by its id (' + s.sessionId + ').')) return;
    await busy(btn, async () => {
      await post('/v1/sessions/reset', undefined, { key: s.key });
      toast('Session ' + s.key + ' was reset');
      await load();
    });
  }

  // The gateway waits for a turn running in the session, and refuses
  // (conflict) while one waits for an exec approval: its message says so.
  async function remove(btn, s) {
    if (!confirm('Delete session ' + escapeControl(s.key) + ' for good? Its settings and its transcript (' + s.messages + ' messages) are deleted and cannot be brought back; export it first to keep a copy. Transcripts an earlier reset replaced stay in the store.')) return;
    await busy(btn, async () => {
      await post('/v1/sessions/delete', undefined, { key: s.key });
      toast('Session ' + s.key + ' was deleted');
      await load();
    });
  }

  function draw() {
    const q = filter.value.trim().toLowerCase();
    const rows = q ? sessions.filter(s => (s.key + ' ' + (s.displayName || '')).toLowerCase().includes(q)) : sessions;
    count.textContent = rows.length === sessions.length ? sessions.length + ' sessions' : rows.length + ' of ' + sessions.length + ' sessions';
    const cols = [
      { label: 'Key', get: s => h('code', {}, s.key) },
      { label: 'Channel', get: s => s.channel || '', opt: true },
      { label: 'Name', get: s => s.displayName || '' },
      { label: 'Updated', get: s => when(s.updatedAt), opt: true },
      { label: 'Messages', get: s => String(s.messages) },
      { label: 'Model', get: s => s.model || '', opt: true },
      { label: 'Tokens', get: s => String(s.totalTokens || 0), opt: true },
      { label: 'Actions', get: s => {
        const label = s.displayName || s.key;
        const cell = h('div', { class: 'row actions' },
          h('a', { class: 'button', href: '#/chat/' + encodeURIComponent(s.key), 'data-key': s.key, 'data-action': 'open', 'aria-label': 'Open ' + label + ' in chat' }, 'Open in chat'),
          h('button', { 'data-key': s.key, 'data-action': 'history', 'aria-expanded': 'false', 'aria-label': 'History of ' + label }, 'History'),
          h('button', { 'data-key': s.key, 'data-action': 'export', 'aria-label': 'Export ' + label + ' as JSONL', onclick: e => busy(e.currentTarget, () => download('/v1/sessions/export', { key: s.key }, fileName(s.key))) }, 'Export'));
        if (writer) cell.append(
          h('button', { class: 'danger', 'data-key': s.key, 'data-action': 'reset', 'aria-label': 'Reset ' + label }, 'Reset'),
          h('button', { class: 'danger', 'data-key': s.key, 'data-action': 'delete', 'aria-label': 'Delete ' + label }, 'Delete'));
        return cell;
      } },
    ];
    const t = table(cols, rows, sessions.length ? 'No session matches the filter.' : 'No sessions yet.');
    if (t.tagName === 'TABLE') {
      t.id = 'sessions-table';
      t.querySelectorAll('tbody tr').forEach((tr, i) => {
        const s = rows[i];
        tr.dataset.key = s.key;
        tr.querySelector('[data-action=history]').addEventListener('click', e => toggleHistory(e.currentTarget, s, tr));
        const r = tr.querySelector('[data-action=reset]');
        if (r) r.addEventListener('click', e => reset(e.currentTarget, s));
        const d = tr.querySelector('[data-action=delete]');
        if (d) d.addEventListener('click', e => remove(e.currentTarget, s));
      });
    }
    list.replaceChildren(t);
  }

  async function load() {
    try {
      sessions = await get('/v1/sessions');
      sessions.sort((a, b) => new Date(b.updatedAt) - new Date(a.updatedAt));
      draw();
    } catch (e) { showError(e, list); }
  }

  filter.addEventListener('input', draw);
  refresh.addEventListener('click', () => busy(refresh, load));
  await load();
  filter.focus();
}
