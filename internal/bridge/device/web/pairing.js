// The API's one caller, pairing this browser, and the views shown
// before the main one (unpaired, refused, signed out, offline).

import { API, PAIRED_FLAG, add, button, el, main, setConn, utf8 } from './dom.js';
import { agents, closeStream, convs, forgetState, openStream, pending, refresh } from './live.js';
import { agentNodes, convNodes, jobs, onScreen } from './view.js';
import { drawNotify, notifyCheck } from './notify.js';

// ---------------------------------------------------------------- API

// call makes one request to the device API. The reply's error message,
// when there is one, is a sentence for the user. It never waits for
// drawing: a tap's write leaves at once.
export async function call(method, path, body, etag) {
  const opt = { method, headers: {}, credentials: 'same-origin', cache: 'no-store', redirect: 'error' };
  // A read the page holds already comes back 304, with no body.
  if (etag) opt.headers['If-None-Match'] = etag;
  if (body !== undefined) {
    opt.headers['Content-Type'] = 'application/json';
    opt.body = JSON.stringify(body);
  }
  // Every state-changing request, pairing included, passes the write
  // gate, which asks for this header (D6).
  if (method !== 'GET') opt.headers['Collie-Write'] = '1';
  let resp;
  try {
    resp = await fetch(API + path, opt);
  } catch (e) {
    return { ok: false, status: 0, data: null, code: 'unreachable', message: 'The bridge cannot be reached. Is collie running, and is this device on its network?' };
  }
  let data = null;
  try {
    data = await resp.json();
  } catch (e) {
    data = null;
  }
  const err = data && typeof data === 'object' && data.error && typeof data.error === 'object' ? data.error : null;
  // A reverse proxy in front answers for a bridge that is down.
  if (!err && (resp.status === 502 || resp.status === 503 || resp.status === 504)) {
    return { ok: false, status: resp.status, data: null, code: 'unreachable', message: 'The bridge cannot be reached: the proxy in front of it answered ' + resp.status + '. Is collie running?' };
  }
  let message = '';
  if (err && typeof err.message === 'string') message = err.message;
  else if (!resp.ok) message = 'The bridge answered ' + resp.status + (resp.statusText ? ' ' + resp.statusText : '') + '.';
  // The fix, kept apart from the message by the bridge, reads after it.
  if (err && typeof err.hint === 'string' && err.hint) message += (message ? ' ' : '') + err.hint.charAt(0).toUpperCase() + err.hint.slice(1) + '.';
  return { ok: resp.ok, status: resp.status, data, code: err && typeof err.code === 'string' ? err.code : '', message, etag: resp.headers.get('ETag') || '' };
}

export function agentPath(agent, write) {
  return '/agents/' + encodeURIComponent(agent) + '/' + write;
}

export function requestId() {
  return crypto.randomUUID();
}

// ---------------------------------------------------------------- pairing

export let view = 'loading';

export let me = {}; // /whoami: this device
function setView(name, ...children) {
  view = name;
  agentNodes.clear();
  convNodes.clear();
  jobs.length = 0;
  onScreen.clear();
  main.removeAttribute('aria-busy');
  main.replaceChildren();
  add(main, children);
}

// takeSecret reads #pair=<secret> and removes it from the address bar
// and history at once, so it is not left behind for anyone to copy.
export function takeSecret() {
  const h = location.hash;
  if (!h.startsWith('#pair=')) return null;
  history.replaceState(null, '', location.pathname + location.search);
  return h.slice('#pair='.length);
}

// verificationCode is device.VerificationCode: six digits of SHA-256
// over "collie-pair:" and the secret, shown as "123 456".
async function verificationCode(secret) {
  const sum = await crypto.subtle.digest('SHA-256', utf8.encode('collie-pair:' + secret));
  const n = new DataView(sum).getUint32(0, false) % 1000000;
  const s = String(n).padStart(6, '0');
  return s.slice(0, 3) + ' ' + s.slice(3);
}

function secureEnough() {
  return window.isSecureContext && window.crypto && crypto.subtle && typeof crypto.randomUUID === 'function';
}

function insecureNotice() {
  return el('section', { class: 'card notice', role: 'alert' },
    el('h2', null, 'This page needs a secure connection'),
    el('p', null, 'The browser keeps the cryptography this page needs for https pages and for http://127.0.0.1 or http://localhost. Open the address collie pair printed, unchanged.'));
}

export async function showPairing(secret) {
  closeStream();
  if (!secureEnough()) {
    setView('pair', insecureNotice());
    return;
  }
  if (!/^[A-Za-z0-9_-]{16,512}$/.test(secret)) {
    setView('pair', el('section', { class: 'card notice', role: 'alert' },
      el('h2', null, 'This pairing link is damaged'),
      el('p', null, 'Run ', el('code', null, 'collie pair'), ' on the computer again and open the new link whole.')));
    return;
  }
  setConn('Not paired yet', 'off');
  const code = await verificationCode(secret);
  const codeEl = el('p', { id: 'pair-code', class: 'code', 'aria-label': 'Verification code ' + code.split('').join(' ') }, code);
  // Left empty, the bridge names the device after its browser and
  // platform ("Chrome on Android"), from the request's User-Agent.
  const name = el('input', { id: 'pair-name', name: 'name', type: 'text', autocomplete: 'off', maxlength: '64', placeholder: 'Optional', 'aria-describedby': 'pair-name-hint' });
  const submit = el('button', { id: 'pair-submit', type: 'submit', class: 'primary' }, 'Pair this device');
  const msg = el('p', { id: 'pair-msg', class: 'msg', role: 'alert' });
  const form = el('form', { class: 'pair-form', novalidate: true },
    el('label', { for: 'pair-name' }, 'Name for this device'),
    name,
    el('p', { id: 'pair-name-hint', class: 'muted' }, 'Shown in collie devices and in the audit log. Left empty, it is named after this browser, such as “Chrome on Android”.'),
    el('div', { class: 'row' }, submit, button('Cancel', { class: 'secondary' }, () => {
      secret = null;
      enter();
    })),
    msg);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (secret === null || submit.disabled) return;
    const deviceName = name.value.trim();
    submit.disabled = true;
    msg.className = 'msg';
    msg.textContent = 'Pairing…';
    const r = await call('POST', '/pair', { secret, name: deviceName });
    if (r.ok) {
      secret = null;
      try {
        localStorage.setItem(PAIRED_FLAG, '1');
      } catch (e) {
        // Private mode: the page still works; a browser whose sign-in
        // is cleared is then told "not paired" rather than "not paired
        // any more".
      }
      await enter();
      return;
    }
    secret = null; // used up either way: the bridge forgets a secret it was shown
    msg.className = 'msg error';
    msg.textContent = r.message || 'Pairing failed.';
  });
  setView('pair', el('section', { class: 'card pair', 'aria-labelledby': 'pair-title' },
    el('h2', { id: 'pair-title' }, 'Pair this device with Collie'),
    el('p', { class: 'label' }, 'Verification code'),
    codeEl,
    el('p', { class: 'warn' }, 'Pair only if this matches the code in your terminal.'),
    form));
  name.focus();
}

function showUnpaired() {
  closeStream();
  setConn('Not paired', 'off');
  setView('unpaired', el('section', { class: 'card notice', 'aria-labelledby': 'unpaired' },
    el('h2', { id: 'unpaired' }, 'This device is not paired'),
    el('p', null, 'On the computer that runs Collie, run ', el('code', null, 'collie pair'),
      ' and open the link it prints on this device, or scan its QR code.')));
}

// showRefused is the page for a 401. The bridge says which it is:
// "revoked" only for a revoked device's credential; "not-paired" when
// the browser sent none (never paired here, or its sign-in, the cookie,
// was cleared or expired) or one the bridge does not know. Only the
// first is a revocation.
export function showRefused(r) {
  if (r && r.code === 'revoked') {
    showRevoked();
    return;
  }
  let paired = false;
  try {
    paired = localStorage.getItem(PAIRED_FLAG) === '1';
  } catch (e) {
    paired = false;
  }
  if (paired) showSignedOut();
  else showUnpaired();
}

function showSignedOut() {
  closeStream();
  setConn('Not paired', 'off');
  document.title = 'Collie';
  setView('signed-out', el('section', { class: 'card notice', role: 'alert', 'aria-labelledby': 'signed-out' },
    el('h2', { id: 'signed-out' }, 'This browser is not paired any more'),
    el('p', null, 'Its sign-in to Collie is gone: the browser cleared it (its cookies were removed or expired), or the bridge no longer knows it. It was not revoked. To use it again, run ',
      el('code', null, 'collie pair'), ' on the computer and open the new link here.')));
}

function showRevoked() {
  closeStream();
  setConn('Not connected', 'bad');
  document.title = 'Collie';
  setView('revoked', el('section', { class: 'card notice', role: 'alert', 'aria-labelledby': 'revoked' },
    el('h2', { id: 'revoked' }, 'This device was revoked; pair it again'),
    el('p', null, 'Its access to Collie was taken away, so it no longer shows or answers anything. To use it again, run ',
      el('code', null, 'collie pair'), ' on the computer and open the new link here.')));
}

function showOffline(message) {
  closeStream();
  setConn('Offline', 'bad');
  setView('offline', el('section', { class: 'card notice', role: 'alert' },
    el('h2', null, 'Collie cannot be reached'),
    el('p', null, message),
    button('Try again', { class: 'primary' }, () => enter())));
}

// enter shows the main view when this browser holds a working credential.
export async function enter() {
  if (!secureEnough()) {
    setView('insecure', insecureNotice());
    return;
  }
  const r = await call('GET', '/whoami');
  if (r.status === 401) {
    showRefused(r);
    return;
  }
  if (!r.ok) {
    showOffline(r.message);
    return;
  }
  me = r.data && typeof r.data === 'object' ? r.data : {};
  forgetState();



  agents.clear();
  convs.clear();
  pending.clear();
  setView('main', el('p', { class: 'muted' }, 'Loading…'));
  notifyCheck().catch(() => drawNotify('off'));
  openStream();
  await refresh();
}
