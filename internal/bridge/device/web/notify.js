// Notifications: Web Push subscription and the service worker's one
// Trusted Types policy.

import { add, button, el } from './dom.js';
import { call } from './pairing.js';
import { busy } from './view.js';

// ---------------------------------------------------------------- notifications

// Web Push (docs/device-api.md, Notifications). Offered after pairing by
// a button: the browser's permission prompt comes only from a tap, never
// from the page on its own. The subscription goes to the bridge as this
// device's. The service worker shows a push and a tap on it opens the
// app (sw-push.js); nothing in a notification answers (D6).
export const notify = {
  node: el('section', { class: 'notify', id: 'notify', hidden: true }),
  key: '', // the bridge's VAPID key, base64url; '' when Web Push is off
  busy: false,
};

function pushSupported() {
  return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

function b64urlBytes(s) {
  const b64 = s.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((s.length + 3) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

// sameKey: the browser's subscription was made with the bridge's key
// (a new key on the bridge ends every subscription made with the old).
function sameKey(sub, key) {
  const k = sub && sub.options && sub.options.applicationServerKey;
  if (!k || !key) return false;
  const a = new Uint8Array(k);
  const b = b64urlBytes(key);
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

// swURL is the service worker's address as the one Trusted Types policy
// the page's CSP allows makes it: registering a worker is a script-URL
// sink, and this policy lets through the constant /sw.js and nothing
// else.
let swPolicy = null;
export function swURL() {
  if (!window.trustedTypes) return '/sw.js';
  if (!swPolicy) {
    swPolicy = window.trustedTypes.createPolicy('collie-sw', {
      createScriptURL: (u) => {
        if (u !== '/sw.js') throw new TypeError('collie-sw makes only /sw.js');
        return u;
      },
    });
  }
  return swPolicy.createScriptURL('/sw.js');
}

// pushRegistration is the app's service worker, registered when it is
// not yet, once it is active.
async function pushRegistration() {
  if (!(await navigator.serviceWorker.getRegistration('/'))) {
    await navigator.serviceWorker.register(swURL(), { scope: '/' });
  }
  let timer = 0;
  const late = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error('the app\'s service worker did not start')), 15000);
  });
  try {
    return await Promise.race([navigator.serviceWorker.ready, late]);
  } finally {
    clearTimeout(timer);
  }
}

export function drawNotify(state, message) {
  const n = notify.node;
  const on = () => notifyOn();
  const views = {
    off: null,
    unsupported: [el('p', { class: 'muted' }, 'This browser does not offer notifications for this page. On an iPhone or iPad, add Collie to the Home Screen and open it from there.')],
    offer: [el('p', null, 'Get a notification on this device when an agent asks a question.'),
      button('Turn on notifications', { id: 'notify-on', class: 'primary' }, on)],
    working: [el('p', { class: 'muted' }, 'Turning on notifications…')],
    on: [el('p', null, 'Notifications are on for this device.'),
      button('Turn off', { id: 'notify-off' }, () => notifyOff())],
    denied: [el('p', { class: 'muted' }, 'Notifications are blocked for this page. Allow them in the browser\'s settings for this site, then reload the page.')],
    error: [el('p', { class: 'msg error', role: 'alert' }, message || 'Notifications could not be turned on.'),
      button('Try again', { id: 'notify-on' }, on)],
  };
  const children = views[state];
  n.hidden = !children;
  n.dataset.state = state;
  n.replaceChildren();
  if (children) add(n, children);
}

// notifyCheck shows where notifications stand, asking the browser for
// nothing. With permission given before, it keeps the bridge's copy of
// this browser's subscription current (the bridge drops one its push
// service ended).
export async function notifyCheck() {
  const r = await call('GET', '/push');
  if (!r.ok || !r.data || typeof r.data.publicKey !== 'string' || r.data.publicKey === '') {
    notify.key = '';
    drawNotify(r.status === 0 || r.status >= 500 ? 'error' : 'off', r.message);
    return;
  }
  notify.key = r.data.publicKey;
  if (!pushSupported()) return drawNotify('unsupported');
  if (Notification.permission === 'denied') return drawNotify('denied');
  if (Notification.permission !== 'granted') return drawNotify('offer');
  const reg = await navigator.serviceWorker.getRegistration('/');
  const sub = reg ? await reg.pushManager.getSubscription() : null;
  if (!sub || !sameKey(sub, notify.key)) return drawNotify('offer');
  if (sub.endpoint !== r.data.endpoint) {
    const p = await call('POST', '/push/subscription', sub.toJSON());
    if (!p.ok) return drawNotify('offer');
  }
  drawNotify('on');
}

// notifyOn runs from the tap on "Turn on notifications": the permission
// request is the first thing it does, inside the tap.
async function notifyOn() {
  if (notify.busy || !notify.key) return;
  notify.busy = true;
  try {
    const asked = Notification.requestPermission();
    drawNotify('working');
    const perm = await asked;
    if (perm !== 'granted') {
      drawNotify(perm === 'denied' ? 'denied' : 'offer');
      return;
    }
    const reg = await pushRegistration();
    const opts = { userVisibleOnly: true, applicationServerKey: b64urlBytes(notify.key) };
    let sub = await reg.pushManager.getSubscription();
    if (sub && !sameKey(sub, notify.key)) {
      await sub.unsubscribe();
      sub = null;
    }
    if (!sub) sub = await reg.pushManager.subscribe(opts);
    let r = await call('POST', '/push/subscription', sub.toJSON());
    if (r.code === 'push-endpoint-taken') {
      // Another paired device (this browser, paired before) holds it:
      // ask the browser for a new subscription of this device's own.
      await sub.unsubscribe();
      sub = await reg.pushManager.subscribe(opts);
      r = await call('POST', '/push/subscription', sub.toJSON());
    }
    if (!r.ok) {
      drawNotify('error', r.message);
      return;
    }
    drawNotify('on');
  } catch (e) {
    drawNotify('error', 'The browser could not turn on notifications: ' + (e && e.message ? e.message : String(e)) + '.');
  } finally {
    notify.busy = false;
  }
}

async function notifyOff() {
  if (notify.busy) return;
  notify.busy = true;
  try {
    const r = await call('DELETE', '/push/subscription');
    if (!r.ok) {
      drawNotify('error', r.message);
      return;
    }
    const reg = await navigator.serviceWorker.getRegistration('/');
    const sub = reg ? await reg.pushManager.getSubscription() : null;
    if (sub) await sub.unsubscribe();
    drawNotify('offer');
  } catch (e) {
    drawNotify('offer');
  } finally {
    notify.busy = false;
  }
}
