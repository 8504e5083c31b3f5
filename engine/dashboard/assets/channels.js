// Channels: each configured channel account and its link; Link shows
// WhatsApp's login QR code live (a new one every ~20 s until scanned) or,
// with a phone number, the pairing code to type on the phone; Logout
// unlinks. Below: senders waiting for the owner's pairing approval,
// refreshed every 5 s while the page is open.
import { h, get, post, stream, table, toast, showError, busy, when, role } from './app.js';
import qrcode from './qrcode.js';
import { escapeControl, escapeID } from './escape.js';

const stateClass = s => s === 'linked' ? 'ok' : s === 'error' || s === 'logged-out' ? 'err' : 'muted';

export async function render(main) {
  const writer = role.value !== 'viewer';
  const list = h('div', { id: 'channels-list' });
  const phone = h('input', { type: 'tel', id: 'channels-phone', autocomplete: 'tel', placeholder: '+15551234567' });
  const qrImg = h('img', { id: 'channels-qr', class: 'qr', alt: 'QR code: scan it with WhatsApp → Settings → Linked devices → Link a device', hidden: true });
  const code = h('div', { id: 'channels-code', class: 'pair-code', 'aria-live': 'polite', hidden: true });
  const loginStatus = h('p', { id: 'channels-login-status', role: 'status' });
  const cancel = h('button', { id: 'channels-login-cancel' }, 'Stop linking');
  const panel = h('section', { id: 'channels-login', class: 'card', 'aria-label': 'Linking', hidden: true }, loginStatus, qrImg, code, h('div', { class: 'row' }, cancel));
  const pairing = h('div', { id: 'channels-pairing' });

  main.append(h('h1', {}, 'Channels'));
  if (writer) {
    main.append(h('div', { class: 'row' },
      h('label', { for: 'channels-phone' }, 'Phone number for a pairing code instead of a QR code (optional)'), phone));
  }
  main.append(list, writer ? panel : '', h('h2', {}, 'Waiting for approval'),
    h('p', { class: 'muted' }, 'People not in a channel’s allowFrom who messaged the assistant get a pairing code; nothing they write reaches the model until you approve them.'),
    pairing);

  let loginCtrl = null;
  let lastChannels = '', lastPairing = '';

  function stopLogin() { if (loginCtrl) { loginCtrl.abort(); loginCtrl = null; } }

  async function login(btn, c) {
    stopLogin();
    const ctrl = loginCtrl = new AbortController();
    const number = phone.value.trim();
    panel.hidden = false; qrImg.hidden = true; code.hidden = true;
    loginStatus.className = ''; loginStatus.textContent = 'Asking ' + c.channel + ' for a ' + (number ? 'pairing code' : 'QR code') + '…';
    let qrCount = 0;
    btn.disabled = true;
    try {
      await stream('POST', '/v1/channels/login', {
        body: { channel: c.channel, account: c.account || undefined, phone: number || undefined }, signal: ctrl.signal,
        onEvent: (name, ev) => {
          switch (ev && ev.type || name) {
            case 'qr': {
              const qr = qrcode(0, 'L'); qr.addData(ev.qr); qr.make();
              qrImg.src = qr.createDataURL(4, 8); qrImg.hidden = false; qrCount++;
              loginStatus.textContent = 'Scan this with WhatsApp → Settings → Linked devices → Link a device.' + (qrCount > 1 ? ' (new code)' : '');
              break;
            }
            case 'code':
              code.textContent = ev.pairingCode; code.hidden = false;
              loginStatus.textContent = 'On the phone: WhatsApp → Linked devices → Link a device → Link with phone number instead, then type this code.';
              break;
            case 'done':
              qrImg.hidden = true; code.hidden = true;
              loginStatus.className = 'ok'; loginStatus.textContent = 'Linked ' + c.channel + (ev.self ? ' as ' + ev.self : '') + '.';
              toast('Linked ' + c.channel);
              break;
            case 'error':
              qrImg.hidden = true; code.hidden = true;
              loginStatus.className = 'err'; loginStatus.textContent = ev.error ? ev.error.message : 'linking failed';
              break;
            default:
              if (ev && ev.message) loginStatus.textContent = ev.message;
          }
        },
      });
    } catch (e) {
      qrImg.hidden = true; code.hidden = true;
      if (e.name === 'AbortError') { loginStatus.className = 'muted'; loginStatus.textContent = 'Stopped: nothing was linked.'; } else { loginStatus.className = 'err'; loginStatus.textContent = e.message; }
    } finally {
      if (loginCtrl === ctrl) loginCtrl = null;
      btn.disabled = false;
      loadChannels();
    }
  }

  async function logout(btn, c) {
    // One line, escaped: an account name cannot push the question off the dialog.
    if (!confirm('Unlink ' + escapeControl(c.channel) + (c.account ? ' (' + escapeControl(c.account) + ')' : '') + '? The assistant stops receiving its messages until it is linked again.')) return;
    await busy(btn, async () => {
      const st = await post('/v1/channels/logout', { channel: c.channel, account: c.account || undefined });
      toast('Unlinked ' + st.channel + ': ' + st.state);
      await loadChannels();
    });
  }

  async function loadChannels() {
    let chans;
    try { chans = await get('/v1/channels'); } catch (e) { showError(e, list); return; }
    chans = chans || [];
    const sig = JSON.stringify(chans);
    if (sig === lastChannels) return; // unchanged: keep focus where it is
    lastChannels = sig;
    const cols = [
      { label: 'Channel', get: c => c.channel },
      { label: 'Account', get: c => c.account || '', opt: true },
      { label: 'State', get: c => h('span', { class: stateClass(c.state) }, c.state) },
      { label: 'As', get: c => c.self || '' },
      { label: 'Since', get: c => when(c.since), opt: true },
      { label: 'Outbox', get: c => String(c.outboxPending || 0) + (c.outboxDead ? ' (+' + c.outboxDead + ' failed)' : ''), opt: true },
      { label: 'Detail', get: c => [c.reason || '', c.detail ? h('div', { class: 'muted' }, c.detail) : null], opt: true },
    ];
    // Link and Logout only where `channels login` links (WhatsApp): a
    // Telegram bot, iMessage or e-mail is linked by its config.
    if (writer && chans.some(c => c.linkable)) cols.push({ label: 'Actions', get: c => !c.linkable ? '' : h('div', { class: 'row actions' },
      h('button', { class: 'primary', 'data-channel': c.channel, 'data-account': c.account || '', 'data-action': 'login', 'aria-label': 'Link ' + c.channel + (c.account ? ' ' + c.account : '') }, 'Link'),
      h('button', { class: 'danger', 'data-channel': c.channel, 'data-account': c.account || '', 'data-action': 'logout', 'aria-label': 'Log out ' + c.channel + (c.account ? ' ' + c.account : '') }, 'Logout')) });
    const t = table(cols, chans, 'No channels are configured (see Config: channels.whatsapp, channels.email …).');
    if (t.tagName === 'TABLE') {
      t.id = 'channels-table';
      t.querySelectorAll('tbody tr').forEach((tr, i) => {
        const c = chans[i];
        tr.dataset.channel = c.channel; tr.dataset.account = c.account || '';
        const li = tr.querySelector('[data-action=login]'), lo = tr.querySelector('[data-action=logout]');
        if (li) li.addEventListener('click', e => login(e.currentTarget, c));
        if (lo) lo.addEventListener('click', e => logout(e.currentTarget, c));
      });
    }
    list.replaceChildren(t);
  }

  async function decide(btn, r, approve) {
    await busy(btn, async () => {
      await post(approve ? '/v1/pairing/approve' : '/v1/pairing/deny', { channel: r.channel, code: r.code });
      toast((approve ? 'Approved ' : 'Denied ') + escapeID(r.senderId));
      lastPairing = '';
      await loadPairing();
    });
  }

  async function loadPairing() {
    let reqs;
    try { reqs = await get('/v1/pairing'); } catch (e) { lastPairing = ''; showError(e, pairing); return; }
    reqs = reqs || [];
    const sig = JSON.stringify(reqs);
    if (sig === lastPairing) return;
    lastPairing = sig;
    const cols = [
      { label: 'Channel', get: r => r.channel },
      { label: 'Account', get: r => r.account || '', opt: true },
      { label: 'Code', get: r => h('code', {}, r.code) },
      { label: 'Sender', get: r => h('code', {}, escapeID(r.senderId)) },
      { label: 'Name', get: r => escapeControl(r.senderName || '') }, // a stranger chose it
      { label: 'Asked', get: r => when(r.createdAt), opt: true },
      { label: 'Expires', get: r => when(r.expiresAt), opt: true },
    ];
    if (writer) cols.push({ label: 'Decision', get: r => h('div', { class: 'row actions' },
      h('button', { class: 'primary', 'data-id': r.code, 'data-channel': r.channel, 'data-action': 'approve', 'aria-label': 'Approve ' + escapeID(r.senderId) }, 'Approve'),
      h('button', { class: 'danger', 'data-id': r.code, 'data-channel': r.channel, 'data-action': 'deny', 'aria-label': 'Deny ' + escapeID(r.senderId) }, 'Deny')) });
    const t = table(cols, reqs, 'Nobody is waiting.');
    if (t.tagName === 'TABLE') {
      t.id = 'pairing-table';
      t.querySelectorAll('tbody tr').forEach((tr, i) => {
        const r = reqs[i];
        tr.dataset.id = r.code; tr.dataset.channel = r.channel;
        for (const b of tr.querySelectorAll('button')) b.addEventListener('click', e => decide(e.currentTarget, r, b.dataset.action === 'approve'));
      });
    }
    pairing.replaceChildren(t);
  }

  cancel.addEventListener('click', () => { stopLogin(); panel.hidden = true; });
  await Promise.all([loadChannels(), loadPairing()]);
  const timer = setInterval(() => { loadPairing(); if (!loginCtrl) loadChannels(); }, 5000);
  return () => { clearInterval(timer); stopLogin(); };
}
