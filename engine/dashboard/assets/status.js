// Status: what `openclaw status` and `openclaw doctor` say, the gateway's
// health and identity and each self-check with what to do about it.
import { h, get, showError, busy, when, bytes, role } from './app.js';

function uptime(s) {
  s = Math.floor(s || 0);
  const d = Math.floor(s / 86400), hr = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  return d ? d + 'd ' + hr + 'h' : hr ? hr + 'h ' + m + 'm' : m ? m + 'm ' + s % 60 + 's' : s + 's';
}

// fixText shows a fix with its commands (`…` in the text) as code.
export function fixText(s) {
  const parts = String(s || '').split('`');
  if (parts.length === 1 && /^(chmod|sudo|openclaw|systemctl|journalctl) /.test(s)) return h('code', {}, s);
  return parts.map((p, i) => i % 2 ? h('code', {}, p) : p);
}

function facts(pairs) {
  return pairs.filter(([, v]) => v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && !v.length))
    .flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]);
}

export async function render(main) {
  const info = h('dl', { id: 'status-info', class: 'facts' });
  const doctor = h('div', { id: 'status-doctor' });
  const refresh = h('button', { id: 'status-refresh' }, 'Refresh');
  const rerun = h('button', { id: 'status-doctor-rerun' }, 'Re-run checks');
  const summary = h('p', { id: 'status-doctor-summary', role: 'status' });
  main.append(h('h1', {}, 'Status'),
    h('div', { class: 'row' }, refresh, role.value !== 'viewer' ? h('a', { href: '#/onboard', id: 'status-setup', class: 'button' }, 'Set up') : null),
    info, h('h2', {}, 'Checks'), h('div', { class: 'row' }, rerun, summary), doctor);

  async function loadStatus() {
    let st;
    try { st = await get('/v1/status'); } catch (e) { showError(e, info); return; }
    const err = v => v ? h('span', { class: 'err' }, v) : '';
    const restart = st.restartPending ?? st.restartNeeded ?? st.restartRequired;
    info.replaceChildren(...facts([
      ['Version', 'openclaw-gateway ' + st.version + ' (api ' + st.apiVersion + ', pid ' + st.pid + ')'],
      ['Uptime', uptime(st.uptimeSeconds) + ' (since ' + when(st.startedAt) + ')'],
      ['Memory', bytes(st.rssBytes) + ' RSS'],
      ['Restart pending', restart ? h('strong', { class: 'err', id: 'status-restart' }, 'yes: restart the gateway to apply the config') : ''],
      ['Agent', st.defaultAgent],
      ['Model', st.model ? h('code', {}, st.model) : h('span', { class: 'err' }, 'none: see Set up')],
      ['Missing models', (st.missingModels || []).map(p => h('div', { class: 'err' }, p.model + ' (agent ' + p.agent + '): ' + p.problem))],
      ['Last model', st.lastModel],
      ['Last failover', st.lastFailover ? st.lastFailover + ' (' + when(st.lastFailoverAt) + ')' : ''],
      ['Sessions', st.sessions + ' (' + st.activeTurns + ' turns running)'],
      ['Local models loaded', (st.runners || []).map(r => h('div', {}, h('code', {}, r.model),
        ' pid ' + r.pid + ', ' + bytes(r.rssBytes) + ' RSS, ' + r.slots + ' sessions × ' + r.contextLen + ' tokens' + (r.variant ? ', ' + r.variant : '') +
        (r.genTokPerSec ? ', ' + r.promptTokPerSec.toFixed(1) + ' / ' + r.genTokPerSec.toFixed(1) + ' tokens/s (prompt / generation)' : '')))],
      ['Local runner', st.localRunnerError ? err(st.localRunnerError) : st.localRunner ? st.localRunner + (st.localRunnerVariant ? ' (' + st.localRunnerVariant + ')' : '') : ''],
      ['Channels', (st.channels || []).map(c => h('div', {}, c.channel + (c.account ? ' (' + c.account + ')' : '') + ': ', h('span', { class: c.state === 'linked' ? 'ok' : 'muted' }, c.state), c.self ? ' as ' + c.self : ''))],
      ['LAN', st.lan ? [st.lan.name + ' · ' + st.lan.bind + (st.lan.addrs && st.lan.addrs.length ? ' · ' + st.lan.addrs.join(', ') : '') + ' · ' + st.lan.devices + ' paired devices' + (st.lan.mdns ? ' · mDNS' : ''),
        st.lan.error ? h('div', { class: 'err' }, st.lan.error) : null] : ''],
      ['Exec sandbox', st.sandbox ? h('span', { class: st.sandboxActive ? '' : 'err' }, st.sandbox) : ''],
      ['State database', err(st.stateWarning)],
      ['Interrupted turns', st.interruptedOpen ? err(st.interruptedOpen + ' not closed yet' + (st.interruptedError ? ': ' + st.interruptedError : '')) : ''],
      ['Last error', st.lastError ? [err(st.lastError), ' (' + when(st.lastErrorAt) + ')'] : 'none'],
      ['State directory', st.stateDir],
    ]));
  }

  async function loadDoctor() {
    doctor.setAttribute('aria-busy', 'true');
    try {
      const rep = await get('/v1/doctor');
      const checks = rep.checks || [];
      const n = s => checks.filter(c => c.status === s).length;
      summary.className = rep.ok ? (n('warn') ? '' : 'ok') : 'err';
      summary.textContent = rep.ok ? (n('warn') ? n('warn') + ' warning(s), nothing failed' : 'All checks passed') : n('fail') + ' check(s) failed';
      doctor.replaceChildren(h('ul', { class: 'checks', id: 'status-checks' }, checks.map(c => h('li', { class: 'check ' + c.status, 'data-name': c.name },
        h('span', { class: 'badge ' + (c.status === 'ok' ? 'ok' : 'err') }, c.status === 'ok' ? '✓ ok' : c.status === 'warn' ? '! warn' : '✗ fail'), ' ',
        h('strong', {}, c.name), ': ', c.detail,
        c.fix ? h('div', { class: 'fix' }, 'Fix: ', fixText(c.fix)) : null))));
    } catch (e) { showError(e, doctor); } finally { doctor.removeAttribute('aria-busy'); }
  }

  refresh.addEventListener('click', () => busy(refresh, loadStatus));
  rerun.addEventListener('click', () => busy(rerun, loadDoctor));
  await Promise.all([loadStatus(), loadDoctor()]);
}
