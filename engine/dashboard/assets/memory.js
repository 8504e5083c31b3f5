// Memory: the default agent's memory index (MEMORY.md and memory/*.md in
// its workspace): its state, a search as the memory_search tool makes it,
// and a reindex with progress.
import { h, get, post, stream, showError, busy, when, bytes, role } from './app.js';

function dl(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '').map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

export async function render(main) {
  const writer = role.value !== 'viewer';
  const ctrl = new AbortController();
  const status = h('div', { id: 'memory-status' });
  const query = h('input', { type: 'search', id: 'memory-query', placeholder: 'What to look for', 'aria-label': 'Search the memory' });
  const go = h('button', { class: 'primary', id: 'memory-search-go', type: 'submit' }, 'Search');
  const results = h('div', { id: 'memory-results', 'aria-live': 'polite' });
  const form = h('form', { class: 'row', role: 'search' }, query, go);
  main.append(h('h1', {}, 'Memory'), status, h('h2', {}, 'Search'), form, results);

  let force, reindex, prog, indexResult;
  if (writer) {
    force = h('input', { type: 'checkbox', id: 'memory-force' });
    reindex = h('button', { id: 'memory-reindex' }, 'Reindex');
    prog = h('progress', { id: 'memory-progress', max: 1, value: 0, hidden: true, 'aria-label': 'Reindex progress' });
    indexResult = h('div', { id: 'memory-index-result', role: 'status' });
    main.append(h('h2', {}, 'Index'),
      h('div', { class: 'row' }, reindex, h('label', {}, force, ' rebuild from scratch'), prog), indexResult);
  }

  async function loadStatus() {
    try {
      const s = await get('/v1/memory/status');
      status.replaceChildren(dl([
        ['Agent', s.agentId], ['Workspace', s.workspace], ['Files', String(s.files)], ['Chunks', String(s.chunks)],
        ['Vectors', s.vectors + (s.dimensions ? ' × ' + s.dimensions : '') + ' (' + s.vectorMode + ')'],
        ['Keyword index', s.textIndex ? 'yes' : 'no'],
        ['Embeddings', s.provider ? s.provider + (s.model ? ' / ' + s.model : '') + (s.fallback ? ' (fallback)' : '') : 'none: keyword search only'],
        ['Last sync', when(s.lastSync) + (s.dirty ? ' (files changed since)' : '')],
        ['Watching files', s.watching ? 'yes' : 'no'], ['On disk', bytes(s.diskBytes)],
        ['Warning', s.warning ? h('span', { class: 'err' }, s.warning) : ''],
        ['Last error', s.lastError ? h('span', { class: 'err' }, s.lastError) : ''],
      ]));
      return true;
    } catch (e) {
      if (e.code === 'memory_off') { status.replaceChildren(h('p', { class: 'err', id: 'memory-off', role: 'alert' }, e.message)); return false; }
      showError(e, status);
      return false;
    }
  }

  form.addEventListener('submit', e => {
    e.preventDefault();
    const q = query.value.trim();
    if (!q) { query.focus(); return; }
    busy(go, async () => {
      try {
        const res = await post('/v1/memory/search', { query: q }, undefined, { signal: ctrl.signal });
        const list = res.results || [];
        results.replaceChildren(
          h('p', { class: 'muted', id: 'memory-results-count' }, list.length + ' result' + (list.length === 1 ? '' : 's') + ' (' + res.mode + (res.fallback ? ', fallback' : '') + ')'),
          res.warning ? h('p', { class: 'err' }, res.warning) : '',
          list.map(r => h('div', { class: 'card result' },
            h('div', { class: 'row' }, h('code', {}, r.path + ':' + r.startLine + '-' + r.endLine), h('span', { class: 'muted' }, 'score ' + r.score.toFixed(3))),
            h('pre', {}, r.snippet))));
      } catch (err) {
        if (err.code === 'memory_off') results.replaceChildren(h('p', { class: 'err' }, err.message)); else showError(err, results);
      }
    });
  });

  if (writer) {
    reindex.addEventListener('click', () => busy(reindex, async () => {
      prog.hidden = false; prog.removeAttribute('value'); indexResult.replaceChildren(h('span', { class: 'muted' }, 'Indexing…'));
      try {
        await stream('POST', '/v1/memory/index', {
          body: { force: force.checked }, signal: ctrl.signal,
          onEvent: (name, ev) => {
            if (name === 'progress') { prog.max = ev.total || 1; prog.value = ev.done || 0; indexResult.replaceChildren(h('span', { class: 'muted' }, (ev.done || 0) + ' of ' + (ev.total || 0) + ' chunks')); }
            else if (name === 'error') indexResult.replaceChildren(h('p', { class: 'err' }, ev.error ? ev.error.message : 'the index failed'));
            else if (name === 'done' && ev.result) {
              const r = ev.result;
              prog.max = 1; prog.value = 1;
              indexResult.replaceChildren(h('p', { class: 'ok' }, (r.rebuilt ? 'Rebuilt: ' : 'Done: ') + r.files + ' files, ' + r.chunks + ' chunks (' + r.added + ' added, ' + r.removed + ' removed, ' + r.embedded + ' embedded, ' + r.cached + ' from cache) in ' + (r.durationMs / 1000).toFixed(1) + ' s'),
                (r.warnings || []).map(w => h('p', { class: 'err' }, w)));
            }
          },
        });
      } catch (e) {
        if (e.code === 'memory_off') indexResult.replaceChildren(h('p', { class: 'err' }, e.message)); else showError(e, indexResult);
      } finally { prog.hidden = true; }
      await loadStatus();
    }));
  }

  await loadStatus();
  query.focus();
  return () => ctrl.abort();
}
