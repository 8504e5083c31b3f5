// Models: the local models installed on the gateway and the catalog's,
// with pull (a download on the gateway's machine, with progress), remove,
// "set as default" (agents.defaults.model) and an upload of a GGUF file
// from this browser's machine (resumable, checked by sha256). The pull,
// upload and set-default functions are exported for the onboarding page.
import { h, get, post, request, stream, table, toast, showError, busy, bytes, role, APIError } from './app.js';
import { escapeControl } from './escape.js';

// Upload limits: the browser hashes the whole file in memory (crypto.subtle
// has no incremental digest), so a bigger file goes through the CLI.
const MAX_BROWSER_UPLOAD = 2 * 1024 * 1024 * 1024;
const CHUNK = 8 << 20; // api.UploadChunk
const RETRIES = 5;

const hex = buf => [...new Uint8Array(buf)].map(b => b.toString(16).padStart(2, '0')).join('');
const sleep = (ms, signal) => new Promise((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  if (signal) signal.addEventListener('abort', () => { clearTimeout(t); reject(new DOMException('aborted', 'AbortError')); }, { once: true });
});

// uploadModel sends file to the gateway as a model named name ("" lets the
// gateway derive it from the file name) by the protocol of
// engine/api/models.go (UploadRequest): start (or resume) an upload, PUT
// the bytes in chunks from the offset the gateway has, resume after a 409
// or a dropped connection, then finish (the gateway checks the sha256 and
// installs the file). onProgress(phase, done, total): phase "hash" (no
// counts), "send" or "finish". Returns the installed api.ModelInfo.
export async function uploadModel(file, name, { onProgress = () => {}, signal } = {}) {
  if (file.size > MAX_BROWSER_UPLOAD) {
    throw new Error(file.name + ' is ' + bytes(file.size) + ': too big to check in a browser (2 GiB at most). Send it from a terminal instead: `openclaw models import ' + file.name + ' --gateway BOX`.');
  }
  if (!crypto.subtle) throw new Error('this browser offers no SHA-256 here (open the dashboard through `openclaw dashboard`, at http://127.0.0.1)');
  onProgress('hash', 0, file.size);
  const sha256 = hex(await crypto.subtle.digest('SHA-256', await file.arrayBuffer()));
  if (signal && signal.aborted) throw new DOMException('aborted', 'AbortError');
  const base = '/v1/models/upload';
  let st = await post(base, { name: name || undefined, file: file.name, size: file.size, sha256 }, undefined, { signal });
  if (st.model) { onProgress('send', file.size, file.size); return st.model; } // already installed with this very file
  const id = st.id;
  let offset = st.offset || 0, failures = 0;
  onProgress('send', offset, file.size);
  while (offset < file.size) {
    try {
      st = await request('PUT', base + '/' + encodeURIComponent(id), { query: { offset }, body: file.slice(offset, Math.min(offset + CHUNK, file.size)), signal });
      offset = st.offset; failures = 0;
    } catch (e) {
      // A 409 (the gateway holds another offset) or a dropped connection:
      // ask where the upload stands and go on from there.
      const gone = () => new Error('the upload keeps failing (' + e.message + '); send the same file again later: it resumes where it stopped');
      if (e.name === 'AbortError' || (e instanceof APIError && e.status !== 409)) throw e;
      if (!(e instanceof APIError) && ++failures > RETRIES) throw gone();
      if (failures) await sleep(1000 * failures, signal);
      try { offset = (await get(base + '/' + encodeURIComponent(id), undefined, { signal })).offset; } catch (e2) {
        if (e2.name === 'AbortError' || e2 instanceof APIError) throw e2;
        if (++failures > RETRIES) throw gone();
      }
    }
    onProgress('send', offset, file.size);
  }
  onProgress('finish', file.size, file.size);
  return post(base + '/finish', undefined, { id }, { signal });
}

// pullModel downloads a catalog model (or an https URL) on the gateway,
// calling onProgress(done, total) (total -1: unknown); it returns the
// installed api.ModelInfo or throws the pull's error.
export async function pullModel(name, { onProgress = () => {}, signal } = {}) {
  let model = null, failed = null;
  await stream('POST', '/v1/models/pull', {
    body: { name }, signal,
    onEvent: (type, ev) => {
      if (type === 'progress') onProgress(ev.done || 0, ev.total || -1);
      else if (type === 'done') model = ev.model;
      else if (type === 'error') failed = ev.error;
    },
  });
  if (failed) throw new APIError(0, failed.code, failed.message);
  if (!model) throw new Error('the pull of ' + name + ' ended without a result');
  return model;
}

// setDefaultModel makes ref ("provider/model") the default agents' model:
// agents.defaults.model, or its primary when it is {primary, fallbacks}.
// Returns the api.ConfigSetResult.
export async function setDefaultModel(ref) {
  let key = 'agents.defaults.model';
  try {
    const cur = await get('/v1/config', { key });
    if (cur.value && typeof cur.value === 'object') key += '.primary';
  } catch { /* no value yet: set the key itself */ }
  return post('/v1/config/set', { key, value: ref });
}

// progressText says how far a transfer is, in words.
export const progressText = (done, total) => total > 0 ? bytes(done) + ' of ' + bytes(total) + ' (' + Math.floor(done * 100 / total) + '%)' : bytes(done);

// uploadForm is the file picker, name field, Upload button and progress;
// onDone(model) runs after a successful upload.
export function uploadForm(ctrl, onDone) {
  const file = h('input', { type: 'file', id: 'models-upload-file', accept: '.gguf' });
  const name = h('input', { type: 'text', id: 'models-upload-name', placeholder: 'from the file name', pattern: '[A-Za-z0-9._-]*' });
  const go = h('button', { class: 'primary', id: 'models-upload-go', disabled: true }, 'Upload');
  const prog = h('progress', { id: 'models-upload-progress', max: 1, value: 0, hidden: true, 'aria-label': 'Upload progress' });
  const status = h('span', { id: 'models-upload-status', role: 'status' });
  file.addEventListener('change', () => {
    const f = file.files[0];
    go.disabled = !f;
    if (f && !name.value) name.placeholder = f.name.replace(/\.gguf$/i, '');
    status.textContent = f ? f.name + ', ' + bytes(f.size) : '';
    status.className = f && f.size > MAX_BROWSER_UPLOAD ? 'err' : '';
  });
  go.addEventListener('click', async () => {
    const f = file.files[0];
    if (!f) return;
    go.disabled = true; file.disabled = true; prog.hidden = false; status.className = '';
    try {
      const m = await uploadModel(f, name.value.trim(), {
        signal: ctrl.signal,
        onProgress: (phase, done, total) => {
          if (phase === 'hash') { prog.removeAttribute('value'); status.textContent = 'Computing the checksum of ' + f.name + '…'; }
          else if (phase === 'send') { prog.max = total || 1; prog.value = done; status.textContent = 'Sending: ' + progressText(done, total); }
          else { prog.removeAttribute('value'); status.textContent = 'Checking and installing on the gateway…'; }
        },
      });
      prog.max = 1; prog.value = 1;
      status.className = 'ok'; status.textContent = 'Installed ' + m.name + ' (' + m.ref + ')';
      toast('Uploaded ' + m.name);
      file.value = ''; name.value = '';
      if (onDone) await onDone(m);
    } catch (e) {
      prog.hidden = true;
      if (e.name !== 'AbortError') { status.className = 'err'; status.textContent = e.message; }
    } finally { file.disabled = false; go.disabled = !file.files[0]; }
  });
  return h('div', { class: 'card', id: 'models-upload' },
    h('div', { class: 'row' }, h('label', { for: 'models-upload-file' }, 'GGUF file'), file),
    h('div', { class: 'row' }, h('label', { for: 'models-upload-name' }, 'Name'), name, go),
    h('div', { class: 'row' }, prog, status));
}

export async function render(main) {
  const writer = role.value !== 'viewer';
  const ctrl = new AbortController();
  const installed = h('div', { id: 'models-installed' });
  const catalog = h('div', { id: 'models-catalog' });
  const note = h('div', { id: 'models-note' });
  const pullErr = h('div', { id: 'models-pull-error' });
  main.append(h('h1', {}, 'Models'), note, h('h2', {}, 'Installed'), installed, h('h2', {}, 'Catalog'), pullErr, catalog);
  if (writer) {
    main.append(h('h2', {}, 'Upload a model file'),
      h('p', { class: 'muted' }, 'A GGUF file on this computer, up to 2 GiB; an interrupted upload resumes when you send the same file again.'),
      uploadForm(ctrl, () => load()));
  }
  let st = {};
  const pulling = new Map(); // name → progress cell, kept across redraws

  async function setDefault(btn, m) {
    await busy(btn, async () => {
      const res = await setDefaultModel(m.ref);
      toast('Default model: ' + m.ref + (res.restartNeeded ? ' (restart the gateway to apply it)' : ''));
      await load();
    });
  }

  async function remove(btn, m) {
    // One line, escaped: a model name cannot push the question off the dialog.
    if (!confirm('Remove ' + escapeControl(m.name) + '? ' + (m.source === 'pull' || m.catalog ? 'Its file is deleted from the gateway.' : 'It is forgotten; an imported file stays where it is.'))) return;
    await busy(btn, async () => {
      await post('/v1/models/remove', undefined, { name: m.name });
      toast('Removed ' + m.name);
      await load();
    });
  }

  async function pull(btn, m) {
    const prog = h('progress', { id: 'models-pull-' + m.name, class: 'pull-progress', 'data-name': m.name, max: 1, 'aria-label': 'Download of ' + m.name });
    const text = h('span', { class: 'muted', role: 'status' }, 'starting…');
    const cell = h('div', { class: 'row' }, prog, text);
    pulling.set(m.name, cell);
    btn.replaceWith(cell);
    pullErr.replaceChildren();
    try {
      const got = await pullModel(m.name, {
        signal: ctrl.signal,
        onProgress: (done, total) => {
          if (total > 0) { prog.max = total; prog.value = done; } else prog.removeAttribute('value');
          text.textContent = progressText(done, total);
        },
      });
      toast('Installed ' + got.name);
    } catch (e) {
      if (e.name !== 'AbortError') { showError(e); pullErr.replaceChildren(h('p', { class: 'err', role: 'alert' }, m.name + ': ' + e.message)); }
    }
    pulling.delete(m.name);
    if (!ctrl.signal.aborted) await load();
  }

  function wire(t, rows, id) {
    if (t.tagName !== 'TABLE') return t;
    t.id = id;
    t.querySelectorAll('tbody tr').forEach((tr, i) => {
      const m = rows[i];
      tr.dataset.name = m.name;
      for (const b of tr.querySelectorAll('button[data-action]')) {
        const act = { default: setDefault, remove, pull }[b.dataset.action];
        b.addEventListener('click', e => act(e.currentTarget, m));
      }
    });
    return t;
  }

  async function load() {
    let models;
    try {
      [models, st] = await Promise.all([get('/v1/models'), get('/v1/status').catch(() => ({}))]);
    } catch (e) { showError(e, installed); return; }
    models = models || [];
    note.replaceChildren();
    if (st.localRunnerError) note.append(h('p', { class: 'err', id: 'models-runner-warning' }, st.localRunnerError));
    for (const p of st.missingModels || []) note.append(h('p', { class: 'err' }, p.model + ': ' + p.problem));
    const inst = models.filter(m => m.installed), cat = models.filter(m => m.catalog && !m.installed);
    const icols = [
      { label: 'Name', get: m => [m.name, m.missing ? h('span', { class: 'err' }, ' (file missing)') : null] },
      { label: 'Ref', get: m => h('code', {}, m.ref) },
      { label: 'Kind', get: m => m.kind || '', opt: true },
      { label: 'Size', get: m => bytes(m.size) },
      { label: 'SHA-256', get: m => m.sha256 ? h('code', { title: m.sha256 }, m.sha256.slice(0, 12)) : '', opt: true },
      { label: 'Default', get: m => m.ref === st.model ? h('strong', { class: 'ok' }, 'in use') : m.default ? h('span', { class: 'muted' }, 'catalog ' + m.default) : '' },
    ];
    if (writer) icols.push({ label: 'Actions', get: m => h('div', { class: 'row actions' },
      m.kind !== 'embedding' && m.ref !== st.model ? h('button', { 'data-name': m.name, 'data-action': 'default', 'aria-label': 'Make ' + m.name + ' the default model' }, 'Set default') : null,
      h('button', { class: 'danger', 'data-name': m.name, 'data-action': 'remove', 'aria-label': 'Remove ' + m.name }, 'Remove')) });
    installed.replaceChildren(wire(table(icols, inst, 'No local model is installed.'), inst, 'models-installed-table'));
    const ccols = [
      { label: 'Name', get: m => [m.name, m.default ? h('span', { class: 'muted' }, ' (default ' + m.default + ')') : null] },
      { label: 'Kind', get: m => m.kind || '', opt: true },
      { label: 'Size', get: m => bytes(m.size) },
      { label: 'About', get: m => [m.description || '', m.license ? h('div', { class: 'muted' }, m.license) : null], opt: true },
    ];
    if (writer) ccols.push({ label: 'Get', get: m => pulling.get(m.name) ||
      h('button', { class: 'primary', 'data-name': m.name, 'data-action': 'pull', 'aria-label': 'Pull ' + m.name }, 'Pull') });
    catalog.replaceChildren(wire(table(ccols, cat, 'Every catalog model is installed.'), cat, 'models-catalog-table'));
  }

  await load();
  return () => ctrl.abort();
}
