// The page's constants, its DOM helpers (elements, text nodes, sync)
// and the one check of a web address. Agent text becomes text nodes and
// attribute values only.


export const API = '/api/v1';
export const SEND_MAX = 32768; // X4: text sent to an agent is 1 to 32768 bytes
export const LINK_MAX = 2048; // X6
export const BELT_MAX = 4; // D2
export const CONFIRM_DELAY = 600; // ms before the always-allow confirmation can be tapped
export const SEP = ' '; // joins ids into keys: an id never holds a space (X5)
// A text longer than this (characters or lines) is folded on its card.
export const FOLD_CHARS = 360;
export const FOLD_LINES = 8;
export const FOLD_PART = 160; // characters of its head, and of its tail, left in view
export const PAIRED_FLAG = 'collie.paired'; // not a secret: only "this browser paired once"

export const main = document.getElementById('main');
const conn = document.getElementById('conn');
export const utf8 = new TextEncoder();

// ---------------------------------------------------------------- DOM

// el builds an element. Attribute names are always literals from this
// file; values may be agent text and are set as attribute values only.
// Children that are strings become text nodes.
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const k of Object.keys(attrs)) {
      const v = attrs[k];
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'data') Object.assign(e.dataset, v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  add(e, children);
  return e;
}

export function add(parent, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    parent.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return parent;
}

export function button(label, attrs, onclick) {
  return el('button', Object.assign({ type: 'button', onclick }, attrs), label);
}

let idSeq = 0;
export function uid(prefix) {
  idSeq += 1;
  return prefix + '-' + idSeq;
}

export function bytes(s) {
  return utf8.encode(s).length;
}

// sync makes parent's children exactly nodes, touching only what
// differs, so a focused input that did not change keeps its focus.
// Nodes that stay are never moved when others come or go before them:
// moving a conversation would make the browser style and lay it out
// again whole.
export function sync(parent, nodes) {
  const want = new Set(nodes);
  for (const ch of Array.from(parent.childNodes)) if (!want.has(ch)) ch.remove();
  let cur = parent.firstChild;
  for (const n of nodes) {
    if (cur === n) cur = cur.nextSibling;
    else parent.insertBefore(n, cur);
  }
}


export function setConn(text, cls) {
  conn.textContent = text;
  conn.className = 'conn ' + (cls || '');
}

// ---------------------------------------------------------------- links

// webURL returns a URL when raw is a web address that may be opened:
// https (or http when allowed), a host, no user name or password, no
// spaces, control or invisible characters, at most LINK_MAX characters.
const BAD_URL_CHARS = /[\s\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u{e0000}-\u{e007f}]/u;
export function webURL(raw, allowHTTP) {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > LINK_MAX) return null;
  if (BAD_URL_CHARS.test(raw)) return null;
  let u;
  try {
    u = new URL(raw);
  } catch (e) {
    return null;
  }
  if (u.protocol !== 'https:' && !(allowHTTP && u.protocol === 'http:')) return null;
  if (!u.hostname || u.username || u.password) return null;
  return u;
}

export function anchor(u, children) {
  return el('a', { href: u.href, rel: 'noopener noreferrer', target: '_blank', referrerpolicy: 'no-referrer' }, children);
}

// hostNote shows where a link goes when its words do not say it.
export function hostNote(u, shown) {
  if (shown === u.href || shown === u.host) return null;
  return el('span', { class: 'host' }, ' (' + u.host + ')');
}
