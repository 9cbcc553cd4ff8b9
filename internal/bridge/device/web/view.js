// The main view: drawing in slices, agents, conversations and their
// items, and keeping focus across a redraw.

import { BELT_MAX, SEP, add, button, el, main, sync, uid } from './dom.js';
import { mdPieces, renderMarkdown } from './markdown.js';
import { me, view } from './pairing.js';
import { agents, convs, loaded, order } from './live.js';
import { renderItem, renderQuestion } from './cards.js';
import { renderConvTools, tapBelt, tapStarter } from './writes.js';
import { notify } from './notify.js';

// ---------------------------------------------------------------- drawing in slices

// Drawing never holds the page for long: a pass draws the page's frame
// (agents, conversation heads, questions, composers) and reuses every
// item whose content did not change; markdown items that changed are
// drawn as jobs, in slices of at most SLICE_MS, the conversations on
// screen first. Taps and typing run between slices, and a write is sent
// before anything is drawn for it.
const SLICE_MS = 8;
export const jobs = []; // { ck: conversation key, run }
let passTimer = 0;
let workTimer = 0;
export const onScreen = new Set(); // conversation keys on screen
const seenObserver = 'IntersectionObserver' in window ? new IntersectionObserver((entries) => {
  for (const e of entries) {
    if (e.isIntersecting) onScreen.add(e.target.ck);
    else onScreen.delete(e.target.ck);
  }
}) : null;

// render asks for a pass soon; passes are coalesced.
export function render() {
  if (!passTimer) passTimer = setTimeout(pass, 0);
}

// renderNow draws at once, for a handler that moves focus next.
export function renderNow() {
  clearTimeout(passTimer);
  pass();
}

function work(since) {
  workTimer = 0;
  const start = since || performance.now();
  while (jobs.length && performance.now() - start < SLICE_MS) {
    let i = jobs.findIndex((j) => onScreen.has(j.ck));
    if (i < 0) i = 0;
    jobs.splice(i, 1)[0].run();
  }
  if (jobs.length) {
    main.setAttribute('aria-busy', 'true');
    if (!workTimer) workTimer = setTimeout(work, 0);
  } else {
    main.removeAttribute('aria-busy');
  }
}


// ---------------------------------------------------------------- the main view

export const agentNodes = new Map(); // agent name → section
export const convNodes = new Map(); // conversation key → { sig, node, items, itemCache }
const convVersion = new Map(); // conversation key → counter of page-side changes
export const cards = new Map(); // question key → { busy, error, done, confirm }
export const agentMsgs = new Map(); // agent name → { text, error }
export const convMsgs = new Map(); // conversation key → { text, error }
export const drafts = new Map(); // focus key → text typed so far
export const openDetails = new Set(); // tool-call keys whose output is open
export const renaming = new Set(); // conversation keys with the rename form open
export const busy = new Set(); // keys of writes in flight

function convKey(agent, conv) {
  return agent + SEP + conv.id;
}

export function questionKey(agent, conv, q) {
  return convKey(agent, conv) + SEP + q.id + SEP + q.revision;
}

export function touch(key) {
  convVersion.set(key, (convVersion.get(key) || 0) + 1);
}

export function card(key) {
  let c = cards.get(key);
  if (!c) {
    c = {};
    cards.set(key, c);
  }
  return c;
}

export function list(v) {
  return Array.isArray(v) ? v : [];
}

// pass draws what the page holds. Conversations whose data and page-side
// state did not change keep their nodes, so typing and focus are not
// disturbed; items that did not change keep theirs.
function pass() {
  passTimer = 0;
  if (view !== 'main' || !loaded) return;
  const start = performance.now();
  const focus = rememberFocus();
  const seenCards = new Set();
  const seenConvs = new Set();
  const waiting = [];
  const sections = [];
  for (const name of order) {
    const a = agents.get(name);
    if (!a || typeof a.name !== 'string') continue;
    sections.push(renderAgent(a, seenConvs, seenCards, waiting));
  }
  for (const k of cards.keys()) if (!seenCards.has(k)) cards.delete(k);
  for (const [k, cn] of convNodes) {
    if (seenConvs.has(k)) continue;
    if (seenObserver && cn.node) seenObserver.unobserve(cn.node);
    onScreen.delete(k);
    convNodes.delete(k);
  }
  for (const k of agentNodes.keys()) if (!agents.has(k)) agentNodes.delete(k);
  const nodes = [renderSummary(waiting), notify.node];
  if (sections.length === 0) {
    nodes.push(el('section', { class: 'card notice' },
      el('h2', null, 'No agents yet'),
      el('p', null, 'Attach a durable agent on the computer with ', el('code', null, 'collie durable attach'), '.')));
  }
  sync(main, nodes.concat(sections, [renderDeviceName()].filter(Boolean)));
  document.title = waiting.length ? 'Collie (' + waiting.length + ')' : 'Collie';
  restoreFocus(focus);
  work(start);
}

// renderSummary is the waiting banner: the questions, each a jump to
// its card. The agent is named once when all are one agent's (
// a phone's width has no room for the same name on every line). The
// device's own name is not part of it: see renderDeviceName.
function renderSummary(waiting) {
  if (waiting.length === 0) {
    return el('section', { class: 'summary', id: 'summary' },
      el('p', null, 'Nothing waits for your answer.'));
  }
  const oneAgent = waiting.every((w) => w.agent === waiting[0].agent);
  const items = waiting.map((w) => el('li', null, button(w.title, { class: 'jump', data: { focus: 'jump' + SEP + w.key }, 'aria-label': 'Go to question: ' + w.title + ' (' + w.agent + ')' }, () => {
    const card = Array.from(main.querySelectorAll('[data-qkey]')).find((e) => e.dataset.qkey === w.key);
    const target = card && card.querySelector('h4');
    if (target) {
      target.scrollIntoView({ block: 'start', behavior: 'smooth' });
      target.focus({ preventScroll: true });
    }
  }), oneAgent ? null : el('span', { class: 'muted small' }, w.agent)));
  return el('section', { class: 'summary waiting', id: 'summary', 'aria-labelledby': 'summary-title' },
    el('h2', { id: 'summary-title' }, waiting.length === 1 ? '1 question waits for you' : waiting.length + ' questions wait for you',
      oneAgent ? el('span', { class: 'summary-agent' }, 'from ' + waiting[0].agent) : null),
    el('ul', { class: 'jumps' }, items));
}

// renderDeviceName says which paired device this is, at the foot of the
// page, apart from the waiting banner.
function renderDeviceName() {
  const name = me && typeof me.name === 'string' && me.name ? me.name : '';
  return name ? el('p', { class: 'device-name muted small', id: 'device-name' }, 'This device: ' + name) : null;
}

function renderAgent(a, seenConvs, seenCards, waiting) {
  let section = agentNodes.get(a.name);
  if (!section) {
    section = el('section', { class: 'agent', data: { agent: a.name } });
    section.convs = el('div', { class: 'convs' });
    agentNodes.set(a.name, section);
  }
  const headId = 'agent-' + agentIndex(a.name);
  section.setAttribute('aria-labelledby', headId);
  const title = typeof a.agent === 'string' && a.agent ? a.agent : a.name;
  const head = el('header', { class: 'agent-head' },
    el('h2', { id: headId }, title, title !== a.name ? el('span', { class: 'muted small' }, ' · ' + a.name) : null),
    a.reachable
      ? el('p', { class: 'status ok' }, 'Reachable')
      : el('p', { class: 'status bad' }, 'Unreachable: ' + (typeof a.reason === 'string' && a.reason ? a.reason : 'no reason was given')));
  const snap = a.snapshot && typeof a.snapshot === 'object' ? a.snapshot : null;
  const parts = [head];
  if (snap) {
    const belt = list(snap.belt).slice(0, BELT_MAX);
    if (belt.length) {
      parts.push(el('div', { class: 'belt', role: 'group', 'aria-label': 'Buttons of ' + title },
        belt.map((b) => button(b.label || b.id, { class: 'belt-btn', data: { action: b.id, focus: a.name + SEP + 'belt' + SEP + b.id }, 'aria-busy': busy.has('belt' + a.name + b.id) ? 'true' : null },
          () => tapBelt(a.name, b)))));
      parts.push(el('p', { class: 'muted small' }, 'Buttons run on the computer, with the agent’s own rights.'));
    }
    const starters = list(snap.starters);
    if (starters.length) {
      parts.push(el('div', { class: 'starters', role: 'group', 'aria-label': 'Start a new conversation' },
        el('span', { class: 'label' }, 'Start:'),
        starters.map((s) => button(s.label || s.id, { class: 'secondary', data: { starter: s.id, focus: a.name + SEP + 'starter' + SEP + s.id } }, () => tapStarter(a.name, s)))));
    }
  }
  const m = agentMsgs.get(a.name);
  parts.push(el('p', { class: 'msg' + (m && m.error ? ' error' : ''), role: 'status' }, m ? m.text : ''));
  const convList = [];
  if (snap) {
    for (const sp of list(snap.spaces)) {
      for (const tab of list(sp && sp.tabs)) {
        for (const id of list(tab && tab.conversations)) {
          if (typeof id !== 'string') continue;
          const key = a.name + SEP + id;
          const held = convs.get(key);
          if (!held || seenConvs.has(key)) continue; // not read yet, or shown already
          const c = held.conv;
          seenConvs.add(key);
          for (const q of list(c.questions)) {
            if (!q || typeof q.id !== 'string') continue;
            const qk = questionKey(a.name, c, q);
            seenCards.add(qk);
            const cs = cards.get(qk);
            if (!(cs && cs.done)) waiting.push({ key: qk, title: q.title || q.id, agent: title });
          }
          const ctx = { agent: a.name, space: sp, tab, conv: c, key, reachable: !!a.reachable };
          convList.push(drawConversation(ctx));
        }
      }
    }
    if (convList.length === 0) convList.push(el('p', { class: 'muted' }, 'No conversations.'));
  } else {
    convList.push(el('p', { class: 'muted' }, 'Nothing from this agent yet.'));
  }
  sync(section.convs, convList);
  parts.push(section.convs);
  sync(section, parts);
  return section;
}

const agentIds = new Map();
function agentIndex(name) {
  if (!agentIds.has(name)) agentIds.set(name, agentIds.size + 1);
  return agentIds.get(name);
}

// drawConversation returns the conversation's node, kept from one
// pass to the next: when its data or page-side state changed, its head,
// questions, composer and actions are drawn again around its items
// container, which never moves (moving it would make the browser style
// and lay out every item again).
function drawConversation(ctx) {
  const key = ctx.key;
  let cn = convNodes.get(key);
  if (!cn) {
    const items = el('div', { class: 'items' });
    cn = { sig: null, conv: null, items, itemCache: new Map(), node: el('article', null, items) };
    cn.node.ck = key;
    if (seenObserver) seenObserver.observe(cn.node);
    convNodes.set(key, cn);
  }
  const sig = [ctx.space && ctx.space.title, ctx.tab && ctx.tab.title, ctx.reachable, convVersion.get(key) || 0];
  if (cn.conv === ctx.conv && cn.sig && sig.every((v, i) => v === cn.sig[i])) return cn.node;
  if (cn.conv !== ctx.conv) syncItems(ctx, cn);
  cn.conv = ctx.conv;
  cn.sig = sig;
  renderConversation(ctx, cn.node, cn.items);
  return cn.node;
}

function renderConversation(ctx, article, items) {
  const c = ctx.conv;
  const titleId = uid('conv');
  const where = [ctx.space && ctx.space.title, ctx.tab && ctx.tab.title].filter((t) => typeof t === 'string' && t).join(' › ');
  const head = el('header', { class: 'conv-head' },
    el('h3', { id: titleId }, c.title || c.id),
    c.closed ? el('span', { class: 'badge closed' }, 'Closed') : null,
    where ? el('p', { class: 'muted small where' }, where) : null);
  const questions = list(c.questions).map((q) => renderQuestion(ctx, q)).filter(Boolean);
  const m = convMsgs.get(ctx.key);
  article.className = 'conv' + (c.closed ? ' is-closed' : '');
  article.setAttribute('aria-labelledby', titleId);
  article.dataset.conv = c.id;
  for (const ch of Array.from(article.childNodes)) if (ch !== items) ch.remove();
  items.before(head);
  const after = [
    questions.length ? el('div', { class: 'questions' }, questions) : null,
    el('p', { class: 'msg' + (m && m.error ? ' error' : ''), role: 'status' }, m ? m.text : ''),
    renderConvTools(ctx),
  ].filter(Boolean);
  items.after(...after);
}

const SHOW_CHARS = 65536;

function itemSize(it) {
  const t = it.tool && typeof it.tool === 'object' ? it.tool : {};
  return [it.text, t.output, t.summary].reduce((n, v) => n + (typeof v === 'string' ? v.length : 0), 64);
}

// sameItem: nothing drawn of the item differs.
function sameItem(a, b) {
  if (a === b) return true;
  if (!a || !b || a.kind !== b.kind || a.id !== b.id || a.role !== b.role || a.text !== b.text || a.language !== b.language || a.url !== b.url) return false;
  const x = a.tool && typeof a.tool === 'object' ? a.tool : {};
  const y = b.tool && typeof b.tool === 'object' ? b.tool : {};
  return x.name === y.name && x.summary === y.summary && x.output === y.output && x.status === y.status;
}

// syncItems makes the items container show the conversation's items,
// keyed by id: an item whose content did not change keeps its node (its
// markdown is parsed once per content); a changed markdown item is
// drawn by a job, a placeholder standing in until then.
function syncItems(ctx, cn) {
  const all = list(ctx.conv.items).filter((it) => it && typeof it === 'object');
  // The newest items, up to SHOW_CHARS of text (more at each tap on
  // "Show earlier items"): however much an agent sends, the page holds
  // and lays out a bounded amount.
  let budget = SHOW_CHARS * (cn.more || 1);
  let from = all.length;
  while (from > 0) {
    const n = itemSize(all[from - 1]);
    if (from < all.length && n > budget) break;
    budget -= n;
    from -= 1;
  }
  const seen = new Map(); // id → occurrences
  const nodes = [];
  const keep = new Set();
  if (from > 0) {
    nodes.push(button('Show ' + from + (from === 1 ? ' earlier item' : ' earlier items'), { class: 'secondary small-btn earlier', data: { focus: ctx.key + SEP + 'earlier' } }, () => {
      cn.more = (cn.more || 1) + 1;
      cn.conv = null; // draw the items again
      render();
    }));
  }
  for (let i = 0; i < all.length; i += 1) {
    const it = all[i];
    const id = typeof it.id === 'string' ? it.id : '';
    const n = seen.get(id) || 0;
    seen.set(id, n + 1);
    if (i < from) continue;
    const k = id + SEP + n;
    keep.add(k);
    let c = cn.itemCache.get(k);
    if (!c || !sameItem(c.it, it)) {
      c = { it, node: null };
      cn.itemCache.set(k, c);
      if (it.kind === 'markdown') {
        // Parsed once for this content, a piece per job; the item has
        // its data-item once whole.
        const pieces = mdPieces(typeof it.text === 'string' ? it.text : '');
        const entry = c;
        const node = el('div', { class: 'item md drawing', data: { drawing: id } });
        entry.node = node;
        let next = 0;
        const job = { ck: ctx.key, run: () => {
          if (cn.itemCache.get(k) !== entry) return; // changed again since
          add(node, renderMarkdown(pieces[next]));
          next += 1;
          if (next < pieces.length) {
            jobs.unshift(job);
            return;
          }
          node.classList.remove('drawing');
          delete node.dataset.drawing;
          node.dataset.item = id;
        } };
        jobs.push(job);
      } else {
        c.node = renderItem(ctx, it);
      }
    }
    if (c.node) nodes.push(c.node);
  }
  for (const k of cn.itemCache.keys()) if (!keep.has(k)) cn.itemCache.delete(k);
  sync(cn.items, nodes);
}


// ---------------------------------------------------------------- focus

export function findFocus(key) {
  for (const e of main.querySelectorAll('[data-focus]')) if (e.dataset.focus === key) return e;
  return null;
}

function rememberFocus() {
  const a = document.activeElement;
  if (!a || !main.contains(a) || !a.dataset || !a.dataset.focus) return null;
  const f = { key: a.dataset.focus };
  if (typeof a.selectionStart === 'number') {
    f.start = a.selectionStart;
    f.end = a.selectionEnd;
  }
  return f;
}

function restoreFocus(f) {
  if (!f) return;
  const a = document.activeElement;
  if (a && a.dataset && a.dataset.focus === f.key && main.contains(a)) return;
  const e = findFocus(f.key);
  if (!e || e.disabled) return;
  e.focus({ preventScroll: true });
  if (f.start !== undefined && typeof e.setSelectionRange === 'function') {
    try {
      e.setSelectionRange(f.start, f.end);
    } catch (err) {
      // Not a text input any more.
    }
  }
}
