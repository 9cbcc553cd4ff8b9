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
export const convs = new Map(); // conversation key → { conv, rev }
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

async function readConversation(name, id) {
  const r = await call('GET', '/agents/' + encodeURIComponent(name) + '/conversations/' + encodeURIComponent(id));
  if (view !== 'main') return false;
  if (r.status === 401) {
    showRefused(r);
    return false;
  }
  if (r.status === 404) {
    convs.delete(name + SEP + id);
    return true;
  }
  if (!r.ok || !r.data || typeof r.data.conversation !== 'object' || !r.data.conversation) return false;
  convs.set(name + SEP + id, { conv: r.data.conversation, rev: num(r.data.rev) });
  return true;
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
