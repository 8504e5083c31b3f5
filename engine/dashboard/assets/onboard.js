// Set up: the first steps on a new box. (1) a model: a local one from the
// catalog or from a file, an Ollama model, or a remote provider with its
// API key; (2) the owner: the channel and handle the owner writes from;
// (3) the time zone; (4) a test message. Each step says what it set in the
// config file; the gateway reads that file at start, so a restart applies
// it (a pulled local model that is already the default needs none).
import { h, get, post, stream, showError, busy, toast, bytes, role } from './app.js';
import { pullModel, setDefaultModel, uploadForm, progressText } from './models.js';

// Remote providers: their API, endpoint and a small default model.
const remotes = {
  openai: { api: 'openai-completions', baseUrl: 'https://api.openai.com/v1', model: 'gpt-4o-mini', label: 'OpenAI' },
  anthropic: { api: 'anthropic-messages', baseUrl: 'https://api.anthropic.com', model: 'claude-sonnet-4-5', label: 'Anthropic' },
  gemini: { api: 'gemini', baseUrl: 'https://generativelanguage.googleapis.com/v1beta', model: 'gemini-2.5-flash', label: 'Google Gemini' },
};
const handleHints = { whatsapp: '+15551234567', email: 'you@example.com', imessage: '+15551234567 or you@icloud.com' };

async function configValue(key) {
  try { return (await get('/v1/config', { key })).value; } catch (e) { if (e.code === 'not_found') return undefined; throw e; }
}

export async function render(main) {
  const writer = role.value !== 'viewer';
  const ctrl = new AbortController();
  const st = await get('/v1/status').catch(() => ({}));
  main.append(h('h1', {}, 'Set up'));
  if (!writer) {
    main.append(h('p', { class: 'err' }, 'This device is a viewer: it may look but not change the gateway. Set up from an operator device or with `openclaw` on the box.'));
    return;
  }
  const current = h('p', { id: 'onboard-current' }, 'Model now: ', st.model ? h('code', {}, st.model) : h('span', { class: 'err' }, 'none'),
    (st.missingModels || []).map(p => h('span', { class: 'err' }, ' — ' + p.model + ': ' + p.problem)));
  const restart = h('p', { id: 'onboard-restart', class: 'err', hidden: true }, 'The config changed: restart the gateway to apply it (`sudo systemctl restart openclaw-gateway`, or stop and start `openclaw-gateway run`), then send the test message.');
  main.append(current, restart);

  // step makes a numbered section with a list of what it set.
  function step(id, title, ...body) {
    const done = h('ul', { class: 'set ok', id: id + '-done', 'aria-live': 'polite' });
    const sec = h('section', { class: 'card step', id, 'aria-labelledby': id + '-title' }, h('h2', { id: id + '-title' }, title), ...body, done);
    main.append(sec);
    return done;
  }
  // set writes one key and records it in done (secret: the value is not shown).
  async function set(done, key, value, secret) {
    const res = await post('/v1/config/set', { key, value });
    done.append(h('li', {}, h('code', {}, key), ' = ', h('code', {}, secret ? '[hidden]' : JSON.stringify(value))));
    if (res.restartNeeded) restart.hidden = false;
    return res;
  }
  async function useModel(done, ref) {
    if (ref === st.model) { done.append(h('li', {}, h('code', {}, ref), ' is already the default model.')); return; }
    const res = await setDefaultModel(ref);
    done.append(h('li', {}, h('code', {}, res.key), ' = ', h('code', {}, JSON.stringify(ref))));
    if (res.restartNeeded) restart.hidden = false;
    st.model = ref;
  }
  // provider defines models.providers.<name> with modelId, or adds to the
  // one there (its other models and keys stay as they are).
  async function provider(done, name, def, modelId, apiKey) {
    const base = 'models.providers.' + name;
    const cur = await configValue(base);
    if (!cur || typeof cur !== 'object') {
      const v = { api: def.api, baseUrl: def.baseUrl || undefined, models: [{ id: modelId }] };
      if (apiKey) v.apiKey = apiKey;
      const res = await post('/v1/config/set', { key: base, value: v });
      done.append(h('li', {}, h('code', {}, base), ' = ', h('code', {}, JSON.stringify({ ...v, apiKey: apiKey ? '[hidden]' : undefined }))));
      if (res.restartNeeded) restart.hidden = false;
      return;
    }
    if (def.baseUrl && cur.baseUrl !== def.baseUrl) await set(done, base + '.baseUrl', def.baseUrl);
    if (apiKey) await set(done, base + '.apiKey', apiKey, true);
    if (Array.isArray(cur.models) && cur.models.length && !cur.models.some(m => m.id === modelId)) await set(done, base + '.models', [...cur.models, { id: modelId }]);
  }

  // 1. The model.
  const choices = [['catalog', 'A local model from the catalog'], ['upload', 'A model file from this computer'], ['ollama', 'An Ollama model'], ['remote', 'A remote provider (API key)']];
  const pick = h('fieldset', { class: 'row', id: 'onboard-source' }, h('legend', {}, 'Where the model comes from'),
    choices.map(([v, label]) => h('label', {}, h('input', { type: 'radio', name: 'onboard-source', value: v, id: 'onboard-src-' + v, checked: v === (st.localRunnerError ? 'ollama' : 'catalog') }), ' ' + label)));
  const panes = {};

  let models = [];
  try { models = await get('/v1/models'); } catch (e) { showError(e); }
  const chat = models.filter(m => m.catalog && m.kind !== 'embedding');
  const catSel = h('select', { id: 'onboard-catalog-model' }, chat.map(m => h('option', { value: m.name, selected: m.default === 'chat' },
    m.name + ' — ' + (m.installed ? 'installed' : bytes(m.size)) + (m.description ? ' — ' + m.description : ''))));
  const catGo = h('button', { class: 'primary', id: 'onboard-catalog-go' }, 'Pull and use');
  const catProg = h('progress', { id: 'onboard-catalog-progress', max: 1, value: 0, hidden: true, 'aria-label': 'Download progress' });
  const catText = h('span', { id: 'onboard-catalog-status', role: 'status' });
  panes.catalog = h('div', {},
    st.localRunnerError ? h('p', { class: 'err' }, st.localRunnerError) : null,
    chat.length ? [h('div', { class: 'row' }, h('label', { for: 'onboard-catalog-model' }, 'Model'), catSel, catGo), h('div', { class: 'row' }, catProg, catText)]
      : h('p', { class: 'muted' }, 'The catalog lists no chat models.'));
  panes.upload = h('div', {});
  const ollUrl = h('input', { type: 'url', id: 'onboard-ollama-url', value: 'http://127.0.0.1:11434' });
  const ollModel = h('input', { type: 'text', id: 'onboard-ollama-model', value: 'qwen3:1.7b' });
  const ollGo = h('button', { class: 'primary', id: 'onboard-ollama-go' }, 'Use this Ollama model');
  panes.ollama = h('div', {},
    h('div', { class: 'row' }, h('label', { for: 'onboard-ollama-url' }, 'Ollama address'), ollUrl),
    h('div', { class: 'row' }, h('label', { for: 'onboard-ollama-model' }, 'Model (as `ollama list` names it)'), ollModel, ollGo));
  const remSel = h('select', { id: 'onboard-remote-provider' }, Object.entries(remotes).map(([k, r]) => h('option', { value: k }, r.label)));
  const remKey = h('input', { type: 'password', id: 'onboard-remote-key', autocomplete: 'off', placeholder: 'sk-…' });
  const remModel = h('input', { type: 'text', id: 'onboard-remote-model', value: remotes.openai.model });
  const remGo = h('button', { class: 'primary', id: 'onboard-remote-go' }, 'Use this provider');
  remSel.addEventListener('change', () => { remModel.value = remotes[remSel.value].model; });
  panes.remote = h('div', {},
    h('div', { class: 'row' }, h('label', { for: 'onboard-remote-provider' }, 'Provider'), remSel),
    h('div', { class: 'row' }, h('label', { for: 'onboard-remote-key' }, 'API key'), remKey),
    h('div', { class: 'row' }, h('label', { for: 'onboard-remote-model' }, 'Model'), remModel, remGo),
    h('p', { class: 'muted' }, 'The key is written to the gateway\u2019s config file (readable only by the gateway\u2019s user) and never shown again.'));
  const modelDone = step('onboard-step-model', '1. Model', pick, ...Object.values(panes));
  panes.upload.append(uploadForm(ctrl, m => useModel(modelDone, m.ref)));
  const showPane = () => { const v = pick.querySelector('input:checked').value; for (const [k, p] of Object.entries(panes)) p.hidden = k !== v; };
  pick.addEventListener('change', showPane);
  showPane();

  catGo.addEventListener('click', () => busy(catGo, async () => {
    const m = chat.find(x => x.name === catSel.value);
    if (!m) return;
    catText.className = '';
    if (!m.installed) {
      catProg.hidden = false;
      try {
        await pullModel(m.name, { signal: ctrl.signal, onProgress: (done, total) => {
          if (total > 0) { catProg.max = total; catProg.value = done; } else catProg.removeAttribute('value');
          catText.textContent = 'Downloading: ' + progressText(done, total);
        } });
      } catch (e) { catProg.hidden = true; catText.className = 'err'; catText.textContent = e.message; return; }
      m.installed = true;
      catText.textContent = 'Installed ' + m.name + '.';
    }
    await useModel(modelDone, m.ref);
  }));
  ollGo.addEventListener('click', () => busy(ollGo, async () => {
    const id = ollModel.value.trim();
    if (!id) { ollModel.focus(); return; }
    await provider(modelDone, 'ollama', { api: 'ollama', baseUrl: ollUrl.value.trim() }, id);
    await useModel(modelDone, 'ollama/' + id);
  }));
  remGo.addEventListener('click', () => busy(remGo, async () => {
    const p = remSel.value, id = remModel.value.trim(), key = remKey.value.trim();
    if (!id) { remModel.focus(); return; }
    if (!key && !(await configValue('models.providers.' + p + '.apiKey'))) { remKey.focus(); toast('Give the API key first', 'error'); return; }
    await provider(modelDone, p, remotes[p], id, key);
    remKey.value = '';
    await useModel(modelDone, p + '/' + id);
  }));

  // 2. The owner.
  let configured = [];
  try { configured = (await get('/v1/channels') || []).map(c => c.channel); } catch { /* whatsapp is offered anyway */ }
  const chans = [...new Set(['whatsapp', ...configured])];
  const ownCh = h('select', { id: 'onboard-owner-channel' }, chans.map(c => h('option', { value: c }, c)));
  const ownId = h('input', { type: 'text', id: 'onboard-owner-handle', placeholder: handleHints.whatsapp, autocomplete: 'off' });
  const ownGo = h('button', { class: 'primary', id: 'onboard-owner-go' }, 'Save owner');
  ownCh.addEventListener('change', () => { ownId.placeholder = handleHints[ownCh.value] || ''; });
  const ownerDone = step('onboard-step-owner', '2. Owner',
    h('p', { class: 'muted' }, 'Where you write to the assistant from. Only the owner may talk to it, run /approve and change settings from a chat; others get a pairing code to approve on the Channels page. Email and iMessage need their own settings first (docs/channels.md).'),
    h('div', { class: 'row' }, h('label', { for: 'onboard-owner-channel' }, 'Channel'), ownCh,
      h('label', { for: 'onboard-owner-handle' }, 'Your number or address'), ownId, ownGo));
  ownGo.addEventListener('click', () => busy(ownGo, async () => {
    const ch = ownCh.value, who = ownId.value.trim();
    if (!who) { ownId.focus(); return; }
    const allow = await configValue('channels.' + ch + '.allowFrom');
    const list = Array.isArray(allow) ? allow : [];
    if (!list.includes(who)) await set(ownerDone, 'channels.' + ch + '.allowFrom', [...list, who]);
    const owners = await configValue('commands.ownerAllowFrom');
    const olist = Array.isArray(owners) ? owners : [];
    if (!olist.includes(ch + ':' + who)) await set(ownerDone, 'commands.ownerAllowFrom', [...olist, ch + ':' + who]);
    else ownerDone.append(h('li', {}, ch + ':' + who + ' is already an owner.'));
  }));

  // 3. The time zone.
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  const here = Intl.DateTimeFormat().resolvedOptions().timeZone || '';
  const tzNow = await configValue('agents.defaults.userTimezone').catch(() => '');
  const tz = h('input', { type: 'text', id: 'onboard-tz', list: 'onboard-tz-list', value: tzNow || here, autocomplete: 'off' });
  const tzGo = h('button', { class: 'primary', id: 'onboard-tz-go' }, 'Save time zone');
  const tzDone = step('onboard-step-tz', '3. Time zone',
    h('p', { class: 'muted' }, 'For the date the assistant sees and the daily session reset. ' + (tzNow ? 'Set now: ' + tzNow + '.' : 'Not set: the box\u2019s own zone applies.')),
    h('div', { class: 'row' }, h('label', { for: 'onboard-tz' }, 'IANA time zone'), tz, h('datalist', { id: 'onboard-tz-list' }, zones.map(z => h('option', { value: z }))), tzGo));
  tzGo.addEventListener('click', () => busy(tzGo, async () => {
    const z = tz.value.trim();
    if (zones.length && z && !zones.includes(z) && !confirm(z + ' is not a time zone this browser knows. Save it anyway?')) return;
    await set(tzDone, 'agents.defaults.userTimezone', z);
  }));

  // 4. A test message.
  const testText = h('input', { type: 'text', id: 'onboard-test-text', value: 'Hello' });
  const testGo = h('button', { class: 'primary', id: 'onboard-test-go' }, 'Send');
  const reply = h('div', { class: 'log', id: 'onboard-test-reply', 'aria-live': 'polite' });
  step('onboard-step-test', '4. Test',
    h('p', { class: 'muted' }, 'Sends a message to the main session with the model the gateway runs now (restart it first after changing the model).'),
    h('div', { class: 'row' }, h('label', { for: 'onboard-test-text' }, 'Message'), testText, testGo), reply);
  testGo.addEventListener('click', () => busy(testGo, async () => {
    const text = testText.value.trim() || 'Hello';
    reply.replaceChildren(h('div', { class: 'msg user' }, text));
    const wait = h('div', { class: 'msg note' }, 'waiting for the model…');
    reply.append(wait);
    let out = null;
    try {
      await stream('POST', '/v1/messages', {
        body: { text, idempotencyKey: crypto.randomUUID() }, signal: ctrl.signal,
        onEvent: (name, ev) => {
          if (name === 'delta') { wait.remove(); if (!out) { out = h('div', { class: 'msg assistant' }); reply.append(out); } out.textContent += ev.text; }
          else if (name === 'error') { wait.remove(); reply.append(h('div', { class: 'msg note err' }, ev.error ? ev.error.message : 'the turn failed')); }
          else if (name === 'done') {
            wait.remove();
            const r = ev.result || {};
            if (!out && r.reply) reply.append(h('div', { class: 'msg assistant' }, r.reply));
            if (r.model) reply.append(h('div', { class: 'msg note', id: 'onboard-test-model' }, 'answered by ' + r.model));
          }
        },
      });
    } catch (e) { wait.remove(); if (e.name !== 'AbortError') reply.append(h('div', { class: 'msg note err' }, e.message)); }
  }));

  return () => ctrl.abort();
}
