// Devices: the paired devices (phones, laptops, this dashboard's CLI),
// with rename, role (operator or viewer) and revoke. The row of the device
// this dashboard speaks through is marked: revoking it ends this page.
import { h, get, post, table, toast, showError, busy, when, role } from './app.js';
import { escapeControl } from './escape.js';

export async function render(main) {
  const writer = role.value !== 'viewer';
  const list = h('div', { id: 'devices-list' });
  const refresh = h('button', { id: 'devices-refresh' }, 'Refresh');
  main.append(h('h1', {}, 'Devices'),
    h('p', { class: 'muted' }, 'Pair a new device with `openclaw pair` on it (the code comes from `openclaw pair code` on the gateway\u2019s machine).'),
    h('div', { class: 'row' }, refresh), list);
  let mine = '';
  try { const me = await get('/v1/whoami'); mine = me.device ? me.device.id : ''; } catch { /* shown by the list's own error */ }

  function renameForm(td, d) {
    const input = h('input', { type: 'text', value: d.name, id: 'devices-name-' + d.id, 'data-id': d.id, 'aria-label': 'New name for ' + d.name, maxlength: 64 });
    const save = h('button', { class: 'primary', 'data-id': d.id, 'data-action': 'rename-save' }, 'Save');
    const cancel = h('button', { 'data-id': d.id, 'data-action': 'rename-cancel' }, 'Cancel');
    const old = [...td.childNodes];
    const restore = () => { td.replaceChildren(...old); td.querySelector('[data-action=rename]')?.focus(); };
    const submit = () => busy(save, async () => {
      const name = input.value.trim();
      if (!name || name === d.name) { restore(); return; }
      await post('/v1/devices/rename', { id: d.id, name });
      toast('Renamed to ' + name);
      await load();
    });
    save.addEventListener('click', submit);
    cancel.addEventListener('click', restore);
    input.addEventListener('keydown', e => {
      if (e.key === 'Enter') { e.preventDefault(); submit(); }
      if (e.key === 'Escape') restore();
    });
    td.replaceChildren(h('div', { class: 'row' }, input, save, cancel));
    input.focus(); input.select();
  }

  async function setRole(sel, d) {
    const want = sel.value;
    await busy(sel, async () => {
      try {
        await post('/v1/devices/role', { id: d.id, role: want });
        toast(d.name + ' is now ' + (want === 'viewer' ? 'a viewer' : 'an operator'));
        d.role = want;
      } catch (e) { sel.value = d.role; throw e; }
    });
  }

  async function revoke(btn, d) {
    const own = d.id === mine;
    // One line, escaped: a device name cannot push the question off the dialog.
    const msg = 'Revoke ' + escapeControl(d.name) + ' (' + escapeControl(d.id) + ')? It can no longer reach the gateway until it is paired again.' +
      (own ? ' This is the device this dashboard uses: revoking it ends this page (run `openclaw pair` again on it to come back).' : '');
    if (!confirm(msg)) return;
    await busy(btn, async () => {
      await post('/v1/devices/revoke', { id: d.id });
      toast('Revoked ' + d.name);
      if (!own) await load();
    });
  }

  async function load() {
    let devs;
    try { devs = await get('/v1/devices'); } catch (e) { showError(e, list); return; }
    devs = devs || [];
    const cols = [
      { label: 'Name', get: d => [d.name, d.id === mine ? h('span', { class: 'muted', id: 'devices-self' }, ' (this dashboard)') : null] },
      { label: 'Id', get: d => h('code', { title: 'fingerprint ' + d.fingerprint }, d.id) },
      { label: 'Role', get: d => writer && d.id !== mine
        ? h('select', { 'data-id': d.id, 'data-action': 'role', 'aria-label': 'Role of ' + d.name, onchange: e => setRole(e.currentTarget, d) },
          ['operator', 'viewer'].map(r => h('option', { value: r, selected: r === d.role }, r)))
        : d.role },
      { label: 'Last seen', get: d => when(d.lastSeen), opt: true },
      { label: 'Connected', get: d => d.connected ? h('span', { class: 'ok' }, 'yes') : 'no' },
      { label: 'Paired', get: d => when(d.createdAt), opt: true },
    ];
    if (writer) cols.push({ label: 'Actions', get: d => h('div', { class: 'row actions' },
      h('button', { 'data-id': d.id, 'data-action': 'rename', 'aria-label': 'Rename ' + d.name }, 'Rename'),
      h('button', { class: 'danger', 'data-id': d.id, 'data-action': 'revoke', 'aria-label': 'Revoke ' + d.name }, 'Revoke')) });
    const t = table(cols, devs, 'No devices are paired.');
    if (t.tagName === 'TABLE') {
      t.id = 'devices-table';
      t.querySelectorAll('tbody tr').forEach((tr, i) => {
        const d = devs[i];
        tr.dataset.id = d.id;
        if (d.id === mine) tr.classList.add('self');
        const rn = tr.querySelector('[data-action=rename]'), rv = tr.querySelector('[data-action=revoke]');
        if (rn) rn.addEventListener('click', () => renameForm(rn.closest('td'), d));
        if (rv) rv.addEventListener('click', e => revoke(e.currentTarget, d));
      });
    }
    list.replaceChildren(t);
  }

  refresh.addEventListener('click', () => busy(refresh, load));
  await load();
}
