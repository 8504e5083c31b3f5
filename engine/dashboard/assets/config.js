// Config: the gateway's config as it reads it now (its file over the
// built-in defaults; secrets come back "[redacted]"), and a form that sets,
// unsets or validates one key in that file. The gateway checks the whole
// result before it writes anything, and reads its config at start only.
import { h, get, post, showError, busy, toast, role, APIError } from './app.js';

// parseValue reads a value as `openclaw config set` does: JSON when it
// parses (18790, true, null, ["a"], {"primary": "…"}), else a plain string.
export function parseValue(s) {
  try { return JSON.parse(s); } catch { return s; }
}

// setKey sets key to value (any JSON value; null removes the key).
export const setKey = (key, value) => post('/v1/config/set', { key, value });

// unsetKey removes key from the file, so its default applies: with
// /v1/config/unset, or with a null set on a gateway without it (null
// removes a key there too).
export async function unsetKey(key) {
  try { return await post('/v1/config/unset', { key }); } catch (e) {
    if (e instanceof APIError && e.status === 404 && /no such endpoint/.test(e.message)) return setKey(key, null);
    throw e;
  }
}

const where = p => (p.file ? p.file + (p.line ? ':' + p.line : '') + ': ' : '') + (p.path ? p.path + ': ' : '') + p.message + (p.reason ? ' (' + p.reason + ')' : '');

export async function render(main) {
  const writer = role.value !== 'viewer';
  const file = h('p', { class: 'muted', id: 'config-file' });
  const json = h('pre', { id: 'config-json', tabindex: 0, 'aria-label': 'The whole config' });
  const reload = h('button', { id: 'config-reload' }, 'Reload');
  const key = h('input', { type: 'text', id: 'config-key', placeholder: 'agents.defaults.model', autocomplete: 'off', spellcheck: 'false' });
  const value = h('textarea', { id: 'config-value', rows: 4, spellcheck: 'false', placeholder: 'JSON ("text", 18789, true, null, ["a"], {"k": 1}) or plain text' });
  const getBtn = h('button', { id: 'config-get', type: 'button' }, 'Get');
  const setBtn = h('button', { id: 'config-set', class: 'primary', type: 'submit' }, 'Set');
  const unsetBtn = h('button', { id: 'config-unset', class: 'danger', type: 'button' }, 'Unset');
  const validateBtn = h('button', { id: 'config-validate', type: 'button' }, 'Validate');
  const result = h('div', { id: 'config-result', 'aria-live': 'polite' });
  const form = h('form', { id: 'config-form', class: 'card' },
    h('div', { class: 'row' }, h('label', { for: 'config-key' }, 'Key'), key, getBtn),
    h('label', { for: 'config-value' }, 'Value'), value,
    h('div', { class: 'row' }, writer ? [setBtn, unsetBtn] : null, validateBtn));
  main.append(h('h1', {}, 'Config'), file, h('div', { class: 'row' }, reload), form, result, json);

  async function load() {
    try {
      const c = await get('/v1/config');
      file.textContent = c.file ? 'File: ' + c.file : 'No config file: the built-in defaults apply.';
      json.textContent = JSON.stringify(c.value, null, 2);
    } catch (e) { showError(e, json); }
  }

  function done(res, what) {
    result.replaceChildren(h('div', { class: 'card' },
      h('p', { class: 'ok' }, what + ' ' + res.key + ' in ' + res.file + (res.created ? ' (created)' : '') + '.'),
      res.value !== undefined && res.value !== null ? h('pre', {}, JSON.stringify(res.value, null, 2)) : null,
      res.backup ? h('p', { class: 'muted' }, 'The file as it was: ' + res.backup + (res.reformatted ? ' (the file is now plain JSON; its comments are only there)' : '')) : null,
      res.restartNeeded ? h('p', { class: 'err', id: 'config-restart' }, 'Restart the gateway to apply it.') : null));
    toast(what + ' ' + res.key);
  }
  function failed(e) {
    if (e instanceof APIError && e.code === 'invalid_config') result.replaceChildren(h('pre', { class: 'err', role: 'alert' }, e.message));
    else showError(e, result);
  }
  const needKey = () => { const k = key.value.trim(); if (!k) { key.focus(); result.replaceChildren(h('p', { class: 'err' }, 'Give a key first, e.g. agents.defaults.model.')); } return k; };

  getBtn.addEventListener('click', () => { const k = needKey(); if (k) busy(getBtn, async () => {
    try { const v = await get('/v1/config', { key: k }); value.value = JSON.stringify(v.value, null, 2); result.replaceChildren(); } catch (e) { failed(e); }
  }); });
  form.addEventListener('submit', e => {
    e.preventDefault();
    const k = needKey();
    if (!k || !writer) return;
    const raw = value.value.trim();
    if (!raw) { value.focus(); result.replaceChildren(h('p', { class: 'err' }, 'Give a value (JSON or plain text; Unset removes the key).')); return; }
    busy(setBtn, async () => { try { done(await setKey(k, parseValue(raw)), 'Set'); await load(); } catch (err) { failed(err); } });
  });
  unsetBtn.addEventListener('click', () => {
    const k = needKey();
    if (!k || !confirm('Remove ' + k + ' from the config file? Its default applies then.')) return;
    busy(unsetBtn, async () => { try { done(await unsetKey(k), 'Removed'); await load(); } catch (err) { failed(err); } });
  });
  validateBtn.addEventListener('click', () => busy(validateBtn, async () => {
    try {
      const v = await post('/v1/config/validate');
      const errs = v.errors || [], warns = v.warnings || [];
      result.replaceChildren(h('div', { class: 'card', id: 'config-validation' },
        h('p', { class: v.ok ? 'ok' : 'err' }, v.missing ? 'No config file: the built-in defaults apply (valid).' : (v.ok ? 'Valid: ' : 'Not valid: ') + v.file + (v.how ? ' (' + v.how + ')' : '')),
        errs.length ? h('ul', { class: 'err' }, errs.map(p => h('li', {}, where(p)))) : null,
        warns.length ? [h('p', {}, 'Warnings:'), h('ul', {}, warns.map(p => h('li', {}, where(p))))] : null));
    } catch (e) { failed(e); }
  }));
  reload.addEventListener('click', () => busy(reload, load));
  await load();
}
