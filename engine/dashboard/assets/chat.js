// Chat: one session's history and a composer. A reply streams in as it is
// written; tool calls show as they happen; an exec that needs approval
// shows its exact command with Allow / Always / Deny buttons.
import { h, get, post, stream, showError, toast, status, APIError } from './app.js';
import { escapeArgv, escapeControl } from './escape.js';

const thinkLevels = ['off', 'minimal', 'low', 'medium', 'high'];

function blocksText(content) {
  if (typeof content === 'string') return content;
  return (content || []).filter(b => b.type === 'text').map(b => b.text).join('');
}

export async function render(main, params) {
  const st = await status();
  // Asked now, read below: one round trip's wait for all of them.
  const modelsP = get('/v1/models'), approvalsP = get('/v1/approvals');
  for (const p of [modelsP, approvalsP]) p.catch(() => {});
  let key = params[0] || 'agent:' + (st.defaultAgent || 'main') + ':main';
  const historyP = get('/v1/sessions/history', { key });
  historyP.catch(() => {});
  const log = h('div', { class: 'log', id: 'chat-log', 'aria-live': 'polite' });
  const input = h('textarea', { id: 'chat-input', rows: 2, placeholder: 'Message (Enter sends, Shift+Enter for a new line)', 'aria-label': 'Message' });
  const send = h('button', { class: 'primary', id: 'chat-send' }, 'Send');
  const stop = h('button', { id: 'chat-stop', disabled: true, title: 'Stop the reply (/stop)' }, 'Stop');
  const model = h('select', { id: 'chat-model', 'aria-label': 'Model' });
  const think = h('select', { id: 'chat-think', 'aria-label': 'Thinking' }, h('option', { value: '' }, 'thinking…'), thinkLevels.map(l => h('option', { value: l }, l)));
  const newBtn = h('button', { title: 'Start a new session (/new)' }, 'New');
  const ctrl = new AbortController();
  let running = false;

  main.append(h('div', { class: 'chat' },
    h('div', { class: 'row' }, h('h1', { class: 'chat-title' }, 'Chat'), h('span', { class: 'muted', id: 'chat-key' }, key), model, think, newBtn),
    log,
    h('div', { class: 'composer' }, input, send, stop)));

  const add = (cls, ...children) => { const m = h('div', { class: 'msg ' + cls }, ...children); log.append(m); log.scrollTop = log.scrollHeight; return m; };

  // The model choice: installed local models and the configured default.
  try {
    const models = await modelsP;
    const names = new Set([st.model].filter(Boolean));
    for (const m of models) if (m.installed) names.add(m.ref || m.name);
    model.append(h('option', { value: '' }, 'model: ' + (st.model || 'none')), [...names].map(n => h('option', { value: n }, n)));
  } catch { model.append(h('option', { value: '' }, 'model: ' + (st.model || 'none'))); }

  async function loadHistory(first) {
    log.replaceChildren();
    const approvals = first ? approvalsP : get('/v1/approvals');
    try {
      const hist = await (first ? historyP : get('/v1/sessions/history', { key }));
      for (const e of hist.entries || []) {
        if (e.type !== 'message' || !e.message) continue;
        const m = e.message;
        if (m.role === 'user') add('user', blocksText(m.content));
        else if (m.role === 'assistant') {
          const text = blocksText(m.content);
          if (text) add('assistant', text);
          for (const b of m.content || []) if (b.type === 'toolCall') add('tool', '⚙ ' + escapeControl(b.name + ' ' + JSON.stringify(b.arguments || {})));
        } else if (m.role === 'toolResult') add('tool', '↳ ' + (m.toolName || 'tool') + (m.isError ? ' (error)' : '') + ': ' + blocksText(m.content).slice(0, 300));
      }
    } catch (e) {
      if (e.code !== 'not_found') showError(e); else add('note', 'No messages yet.');
    }
    try {
      for (const ap of await approvals) if (ap.sessionKey === key) approvalCard(ap);
    } catch { /* a viewer may not see them */ }
  }

  // approvalCard shows what an approval runs, every part escaped as the
  // CLI shows it (a model chose this text: bidi overrides or control
  // characters must not make it read as something else): the whole command,
  // wrapped, never cut or scrolled; the parsed argv and program; every
  // environment variable the call adds; background; cwd; reason. Nothing is
  // focused and the buttons wait a second, so an Enter or Space meant for
  // the composer cannot answer it.
  function approvalCard(ap) {
    const command = String(ap.command ?? '');
    const chars = [...command].length;
    const argv = Array.isArray(ap.argv) && ap.argv.length ? ap.argv : null;
    const env = Array.isArray(ap.env) ? ap.env : [];
    const field = (label, ...value) => h('div', { class: 'approval-field' }, h('span', { class: 'muted' }, label + ': '), ...value);
    const card = add('assistant approval',
      h('div', {}, h('strong', {}, 'Approve this command?')),
      h('pre', { class: 'approval-cmd' }, escapeControl(command)),
      chars > 200 ? h('div', { class: 'muted approval-len' }, chars + ' characters, all shown above') : null,
      argv ? field('parsed as', h('code', {}, escapeArgv(argv))) : null,
      ap.resolved ? field('program', h('code', {}, escapeControl(ap.resolved))) : null,
      env.length ? h('div', { class: 'approval-env' },
        h('strong', {}, 'with environment (' + env.length + (env.length === 1 ? ' variable' : ' variables') + '):'),
        h('ul', {}, env.map(kv => h('li', {}, h('code', {}, escapeControl(kv)))))) : null,
      ap.background ? h('div', { class: 'approval-field' }, h('strong', {}, 'runs in the background'), ' (keeps running after the reply)') : null,
      ap.cwd ? field('in', h('code', {}, escapeControl(ap.cwd))) : null,
      ap.reason ? field('why', escapeControl(ap.reason)) : null);
    card.tabIndex = -1;
    card.setAttribute('role', 'group');
    card.setAttribute('aria-label', 'Exec approval');
    const buttons = h('div', { class: 'row' });
    const decide = decision => async () => {
      for (const b of buttons.querySelectorAll('button')) b.disabled = true;
      try {
        await post('/v1/approvals/' + encodeURIComponent(ap.id), { decision });
        buttons.replaceChildren(h('span', { class: decision === 'deny' ? 'err' : 'ok' }, decision === 'deny' ? 'Denied' : 'Approved (' + decision + ')'));
      } catch (e) { showError(e); for (const b of buttons.querySelectorAll('button')) b.disabled = false; }
    };
    buttons.append(
      h('button', { class: 'primary', 'data-decision': 'allow-once', disabled: true, onclick: decide('allow-once') }, 'Allow once'),
      h('button', { 'data-decision': 'allow-always', disabled: true, onclick: decide('allow-always') }, 'Always allow'),
      h('button', { class: 'danger', 'data-decision': 'deny', disabled: true, onclick: decide('deny') }, 'Deny'));
    card.append(buttons);
    setTimeout(() => {
      for (const b of buttons.querySelectorAll('button')) b.disabled = false;
      card.dataset.ready = '1';
    }, 1000);
  }

  // turn sends text and shows the reply as it streams. A connection that
  // drops mid-turn (Wi-Fi, a busy box) is re-attached with the same
  // idempotency key: the gateway replays the turn's numbered events and
  // goes on live, never running it twice; what was shown is skipped.
  async function turn(text, { quiet } = {}) {
    if (!quiet) add('user', text);
    let reply = null, thinking = null, seen = { turn: '', seq: 0 };
    const wait = add('note', 'waiting for the model…');
    const idempotencyKey = crypto.randomUUID();
    running = true; stop.disabled = false; send.disabled = true;
    const onEvent = (name, ev) => {
      if (ev && ev.seq) {
        if (ev.turn === seen.turn && ev.seq <= seen.seq) return; // shown before the drop
        seen = { turn: ev.turn, seq: ev.seq };
      }
      if (name !== 'queued' && name !== 'accepted') wait.remove();
      switch (name) {
        case 'queued': wait.textContent = 'waiting for the previous turn…'; break;
        case 'accepted': if (ev.accepted && ev.accepted.sessionKey) key = ev.accepted.sessionKey; break;
        case 'delta': if (!reply) reply = add('assistant', ''); reply.textContent += ev.text; log.scrollTop = log.scrollHeight; break;
        case 'thinking': if (!thinking) thinking = add('note', ''); thinking.textContent += ev.text; break;
        case 'tool_call': add('tool', '⚙ ' + escapeControl(ev.tool.name + ' ' + (ev.tool.arguments ? JSON.stringify(ev.tool.arguments) : ''))); reply = null; break;
        case 'tool_result': add('tool', '↳ ' + ev.tool.name + (ev.tool.isError ? ' (error)' : '') + (ev.tool.preview ? ': ' + ev.tool.preview : '')); break;
        case 'approval': approvalCard(ev.approval); break;
        case 'failover': add('note', ev.text); break;
        case 'error': add('note err', ev.error ? ev.error.message : 'the turn failed'); break;
        case 'done': {
          const r = ev.result || {};
          if (r.command || (!reply && r.reply && !r.suppressed)) add(r.command ? 'note' : 'assistant', r.reply);
          break;
        }
      }
    };
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          await stream('POST', '/v1/messages', { body: { text, sessionKey: key, idempotencyKey }, signal: ctrl.signal, onEvent });
          break;
        } catch (e) {
          // A refusal (APIError) or leaving the page is final; a lost
          // connection is tried again, five times, backing off.
          // Slash commands have no idempotency: never sent twice.
          if (e.name === 'AbortError' || e instanceof APIError || text.startsWith('/') || attempt >= 5) throw e;
          const note = add('note', 'connection lost; reattaching to the turn…');
          await new Promise(r => setTimeout(r, 250 * 2 ** attempt));
          note.remove();
        }
      }
    } catch (e) { wait.remove(); if (e.name !== 'AbortError') add('note err', e.message); }
    finally { running = false; stop.disabled = true; send.disabled = false; }
  }

  function submit() {
    const text = input.value.trim();
    if (!text || running) return;
    input.value = '';
    turn(text);
  }
  send.addEventListener('click', submit);
  input.addEventListener('keydown', e => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
    if (e.key === 'Escape' && running) stop.click();
  });
  stop.addEventListener('click', async () => {
    try { await post('/v1/messages', { text: '/stop', sessionKey: key }); } catch (e) { showError(e); }
  });
  newBtn.addEventListener('click', async () => { if (!running) { await turn('/new', { quiet: true }); loadHistory(); } });
  model.addEventListener('change', () => { if (model.value) turn('/model ' + model.value, { quiet: true }).then(() => toast('Model for this session: ' + model.value)); });
  think.addEventListener('change', () => { if (think.value) turn('/think ' + think.value, { quiet: true }); });

  await loadHistory(true);
  input.focus();
  return () => ctrl.abort();
}
