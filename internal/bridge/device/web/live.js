// Live updates: the event stream, and reading the state in deltas.

import { API, SEP, setConn } from './dom.js';
import { call, showRefused, view } from './pairing.js';
import { list, render } from './view.js';

// ---------------------------------------------------------------- live updates

let es = null;
let retryTimer = 0;
let retryDelay = 1000;
let checking = false;

export function openStream() {
  closeStream();
  if (view !== 'main' || document.visibilityState === 'hidden') return;
  setConn('Connecting…', 'wait');
  const s = new EventSource(API + '/events');
  es = s;
  s.addEventListener('change', (ev) => {
    if (es !== s) return;
    retryDelay = 1000;
    setConn('Live', 'ok');
    onChange(ev.data);
  });
  s.addEventListener('error', () => {
    if (es === s) streamError(s);
  });
}

export function closeStream() {
  if (es) es.close();
  es = null;
  clearTimeout(retryTimer);
}

// streamError runs when the stream ends or fails: a revoked device gets
// 401 (EventSource hides the status, so ask whoami); otherwise reconnect.
let recheck = false;
async function streamError(s) {
  setConn('Reconnecting…', 'wait');
  if (checking) {
    recheck = true;
    return;
  }
  checking = true;
  try {
    do {
      recheck = false;
      const r = await call('GET', '/whoami');
      if (es !== s) return;
      if (r.status === 401) {
        showRefused(r);
        return;
      }
    } while (recheck);
    if (s.readyState === EventSource.CLOSED) {
      // The browser gave up on this stream: open a new one, backing off.
      clearTimeout(retryTimer);
      retryTimer = setTimeout(openStream, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 30000);
    }
  } finally {
    checking = false;
  }
}

document.addEventListener('visibilitychange', () => {
  if (view !== 'main') return;
  // A hidden page is not looking: closing its stream lets the bridge
  // poll its agents less often (K8).
  if (document.visibilityState === 'hidden') closeStream();
  else {
    openStream();
    refresh();
  }
});

// ---------------------------------------------------------------- reading deltas

// The page keeps what it read part by part, with each part's revision
// (docs/device-api.md): per agent its outline (status, belt, starters,
// where its conversations are), per conversation the conversation. The
// change feed says which parts changed; only those are read again, and
// only what changed in them is drawn again.
export let loaded = false; // a whole state was read
let stateRev = ''; // the ETag of the state the page holds whole, unquoted
let eventRev = ''; // the revision the last change event named
export let order = []; // agent names, as /api/v1/state lists them
export const agents = new Map(); // agent name → outline agent
export const convs = new Map(); // conversation key → { conv, rev, etag }
export const pending = new Map(); // parts to read: key → { agent, id (a conversation) or undefined (the outline) }
let wantAll = false;
let reading = false;

function num(v) {
  return typeof v === 'number' && isFinite(v) ? v : 0;
}

function dropAgent(name) {
  agents.delete(name);
  order = order.filter((n) => n !== name);
  for (const k of convs.keys()) if (k.startsWith(name + SEP)) convs.delete(k);
}

// readAll reads every agent's outline, unless the page holds the state
// it names, and queues the conversations whose revisions it does not
// hold: the state is read conversation by conversation, never in one
// piece of up to 4 MiB per agent.
async function readAll() {
  const r = await call('GET', '/agents', undefined, stateRev ? '"' + stateRev + '"' : '');
  if (view !== 'main') return false;
  if (r.status === 401) {
    showRefused(r);
    return false;
  }
  if (r.status === 304) return true;
  if (!r.ok) {
    setConn(r.message, 'bad');
    return false;
  }
  const d = r.data && typeof r.data === 'object' ? r.data : {};
  const keep = new Set();
  order = [];
  agents.clear();
  for (const x of list(d.agents)) {
    const a = x && x.agent;
    if (!a || typeof a.name !== 'string' || agents.has(a.name)) continue;
    order.push(a.name);
    agents.set(a.name, a);
    const cr = x.revs && typeof x.revs.conversations === 'object' ? x.revs.conversations || {} : {};
    for (const sp of list(a.snapshot && a.snapshot.spaces)) {
      for (const tab of list(sp && sp.tabs)) {
        for (const id of list(tab && tab.conversations)) {
          if (typeof id !== 'string') continue;
          const key = a.name + SEP + id;
          keep.add(key);
          const have = convs.get(key);
          if (!have || have.rev !== num(cr[id])) pending.set('c' + SEP + key, { agent: a.name, id });
        }
      }
    }
  }
  for (const k of convs.keys()) if (!keep.has(k)) convs.delete(k);
  // The page holds this state once the conversations queued are read.
  if (typeof d.rev === 'string') eventRev = d.rev;
  stateRev = '';
  loaded = true;
  return true;
}

// readOutline reads one agent's outline and queues the conversations
// whose revisions the page does not hold.
async function readOutline(name) {
  const r = await call('GET', '/agents/' + encodeURIComponent(name));
  if (view !== 'main') return false;
  if (r.status === 401) {
    showRefused(r);
    return false;
  }
  if (r.status === 404) {
    dropAgent(name);
    return true;
  }
  if (!r.ok || !r.data || typeof r.data.agent !== 'object' || !r.data.agent) return false;
  const a = r.data.agent;
  if (!agents.has(name)) order = order.concat([name]).sort();
  agents.set(name, a);
  const cr = r.data.revs && typeof r.data.revs.conversations === 'object' ? r.data.revs.conversations || {} : {};
  const keep = new Set();
  for (const sp of list(a.snapshot && a.snapshot.spaces)) {
    for (const tab of list(sp && sp.tabs)) {
      for (const id of list(tab && tab.conversations)) {
        if (typeof id !== 'string') continue;
        const key = name + SEP + id;
        keep.add(key);
        const have = convs.get(key);
        if (!have || have.rev !== num(cr[id])) pending.set('c' + SEP + key, { agent: name, id });
      }
    }
  }
  for (const k of convs.keys()) if (k.startsWith(name + SEP) && !keep.has(k)) convs.delete(k);
  return true;
}

// readConversation reads a conversation the feed says changed: since
// the revision the page holds, only what changed (the bridge answers a
// delta, marked by "since", or the whole conversation); on any doubt
// about a delta, whole.
async function readConversation(name, id) {
  const key = name + SEP + id;
  const path = '/agents/' + encodeURIComponent(name) + '/conversations/' + encodeURIComponent(id);
  for (let whole = false; ; whole = true) {
    const have = whole ? null : convs.get(key);
    const base = have && have.etag ? have.etag : '';
    const r = await call('GET', base ? path + '?since=' + encodeURIComponent(base) : path, undefined, base);
    if (view !== 'main') return false;
    if (r.status === 401) {
      showRefused(r);
      return false;
    }
    if (r.status === 404) {
      convs.delete(key);
      return true;
    }
    if (r.status === 304 && base) return true;
    const d = r.ok && r.data && typeof r.data === 'object' ? r.data : null;
    if (!d) return false;
    let conv = null;
    if (d.delta !== undefined) {
      const now = convs.get(key);
      if (have && now === have && d.since === have.rev) conv = applyDelta(have.conv, d.delta);
      if (!conv && whole) return false; // a delta to a whole read: never loop
      if (!conv) continue; // in doubt: read it whole
    } else if (d.conversation && typeof d.conversation === 'object') {
      conv = d.conversation;
    } else {
      return false;
    }
    convs.set(key, { conv, rev: num(d.rev), etag: r.etag });
    return true;
  }
}

// applyDelta applies a delta (docs/device-api.md) to a conversation the
// page holds and returns the new conversation, or null when it does not
// apply as the bridge says it does. Objects stay as the bridge sent them:
// they are drawn exactly as the same objects read whole.
function applyDelta(c, d) {
  if (!c || !d || typeof d !== 'object' || d.id !== c.id) return null;
  const out = Object.assign({}, c);
  if (d.title !== undefined) {
    if (typeof d.title !== 'string') return null;
    out.title = d.title;
  }
  if (d.closed !== undefined) {
    if (typeof d.closed !== 'boolean') return null;
    out.closed = d.closed;
  }
  const items = applyList(list(c.items), d.removeItems, d.items);
  const questions = applyList(list(c.questions), d.removeQuestions, d.questions);
  if (!items || !questions) return null;
  out.items = items;
  out.questions = questions;
  return out;
}

// applyList removes the ids in remove, then puts each of put where its id
// is, or at the end.
function applyList(have, remove, put) {
  if ((remove !== undefined && !Array.isArray(remove)) || (put !== undefined && !Array.isArray(put))) return null;
  const rm = list(remove);
  const add = list(put);
  if (!rm.length && !add.length) return have;
  const gone = new Set(rm);
  const out = gone.size ? have.filter((e) => !(e && gone.has(e.id))) : have.slice();
  // A few changes are looked up from the end, where the stream is; more
  // build an index once.
  let at = null;
  if (add.length > 4) {
    at = new Map();
    out.forEach((e, i) => { if (e) at.set(e.id, i); });
  }
  for (const e of add) {
    if (!e || typeof e !== 'object' || typeof e.id !== 'string') return null;
    let i = -1;
    if (at) i = at.has(e.id) ? at.get(e.id) : -1;
    else for (let k = out.length - 1; k >= 0; k -= 1) if (out[k] && out[k].id === e.id) { i = k; break; }
    if (i < 0) {
      if (at) at.set(e.id, out.length);
      out.push(e);
    } else {
      out[i] = e;
    }
  }
  return out;
}

// onChange takes one event of the change feed: what to read again.
function onChange(data) {
  let d = null;
  try {
    d = JSON.parse(data);
  } catch (e) {
    d = null;
  }
  if (!d || typeof d !== 'object' || d.all || !Array.isArray(d.changes) || !loaded) {
    wantAll = true;
  } else {
    for (const ch of d.changes) {
      if (!ch || typeof ch.agent !== 'string') continue;
      const name = ch.agent;
      if (ch.gone) {
        dropAgent(name);
        for (const k of pending.keys()) if (pending.get(k).agent === name) pending.delete(k);
        continue;
      }
      if (ch.outline || !agents.has(name)) pending.set('o' + SEP + name, { agent: name });
      for (const c of list(ch.conversations)) {
        if (!c || typeof c.id !== 'string') continue;
        const have = convs.get(name + SEP + c.id);
        if (!have || have.rev !== num(c.rev)) pending.set('c' + SEP + name + SEP + c.id, { agent: name, id: c.id });
      }
      for (const id of list(ch.removed)) if (typeof id === 'string') convs.delete(name + SEP + id);
    }
    render();
  }
  if (d && typeof d.rev === 'string') eventRev = d.rev;
  pump();
}

// pump reads what is queued, one part at a time; each read is drawn
// as it arrives. Reads never wait for drawing.
async function pump() {
  if (reading) return;
  reading = true;
  let ok = true;
  try {
    while (view === 'main' && (wantAll || pending.size)) {
      if (wantAll) {
        wantAll = false;
        if (!(await readAll())) return;
        render();
        continue;
      }
      const [k, job] = pending.entries().next().value;
      pending.delete(k);
      if (!(job.id === undefined ? await readOutline(job.agent) : await readConversation(job.agent, job.id))) ok = false;
      render();
    }
    // Holding every part the last event named: a reconnect may get 304.
    stateRev = ok && eventRev ? eventRev : (ok ? stateRev : '');
  } finally {
    reading = false;
  }
}

export function refresh() {
  wantAll = true;
  return pump();
}


// forgetState drops the state read so far, for a new sign-in.
export function forgetState() {
  loaded = false;
  stateRev = '';
  eventRev = '';
  order = [];
}
