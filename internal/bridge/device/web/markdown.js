// Markdown from agents, drawn as DOM nodes: no HTML is parsed, links
// are web addresses only.

import { LINK_MAX, add, anchor, el, hostNote, webURL } from './dom.js';

// ---------------------------------------------------------------- markdown

// A small markdown renderer that builds DOM nodes: headings, lists,
// block quotes, fenced code, rules, paragraphs; inline code spans,
// emphasis, strong, links and autolinks. Anything else, raw HTML
// included, is shown as its characters (X6). Every search is bounded, so
// hostile text cannot make it slow.
const MD_DEPTH = 6;
const MD_WINDOW = 1024;
const PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';

export function renderMarkdown(src, depth) {
  depth = depth || 0;
  const out = [];
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      i += 1;
      continue;
    }
    const fence = fenceOpen(line);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !fenceClose(lines[i], fence)) {
        body.push(lines[i]);
        i += 1;
      }
      i += 1;
      out.push(el('pre', { class: 'md-code' }, el('code', null, body.join('\n'))));
      continue;
    }
    const h = heading(line);
    if (h) {
      out.push(el('h' + Math.min(6, h.level + 3), { class: 'md-h' }, inline(h.text, depth)));
      i += 1;
      continue;
    }
    if (isRule(line)) {
      out.push(el('hr'));
      i += 1;
      continue;
    }
    if (quoteLine(line) !== null && depth < MD_DEPTH) {
      const body = [];
      while (i < lines.length && quoteLine(lines[i]) !== null) {
        body.push(quoteLine(lines[i]));
        i += 1;
      }
      out.push(el('blockquote', null, renderMarkdown(body.join('\n'), depth + 1)));
      continue;
    }
    const item = listItem(line);
    if (item && depth < MD_DEPTH) {
      const list = el(item.ordered ? 'ol' : 'ul');
      if (item.ordered && item.start !== 1) list.setAttribute('start', String(item.start));
      let cur = null;
      while (i < lines.length) {
        const l = lines[i];
        const it = listItem(l);
        if (it && it.ordered === item.ordered && it.indent < 2) {
          cur = [it.text];
          list.append(el('li'));
          list.lastChild.pending = cur;
          i += 1;
          continue;
        }
        if (isBlank(l)) {
          // A blank line ends the list unless the list goes on after it.
          let j = i + 1;
          while (j < lines.length && isBlank(lines[j])) j += 1;
          const next = j < lines.length ? lines[j] : '';
          const nit = listItem(next);
          if ((nit && nit.ordered === item.ordered && nit.indent < 2) || indentOf(next) >= 2) {
            cur.push('');
            i += 1;
            continue;
          }
          break;
        }
        if (indentOf(l) >= 2 || !startsBlock(l)) {
          cur.push(l.replace(/^ {1,4}/, ''));
          i += 1;
          continue;
        }
        break;
      }
      for (const li of list.children) {
        const blocks = renderMarkdown(li.pending.join('\n'), depth + 1);
        delete li.pending;
        if (blocks.length === 1 && blocks[0].tagName === 'P') add(li, Array.from(blocks[0].childNodes));
        else add(li, blocks);
      }
      out.push(list);
      continue;
    }
    const para = [line];
    i += 1;
    while (i < lines.length && !isBlank(lines[i]) && !startsBlock(lines[i])) {
      para.push(lines[i]);
      i += 1;
    }
    out.push(el('p', null, inline(para.join('\n'), depth)));
  }
  return out;
}

// mdPieces cuts markdown into pieces of about MD_PIECE characters, only
// where a top-level block may begin and never inside a fence, so each
// piece is drawn in one short job. A list cut in two is drawn as two
// lists, the second numbered on from where the first stopped.
const MD_PIECE = 1536;
export function mdPieces(src) {
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  const out = [];
  let cur = [];
  let size = 0;
  let fence = null;
  for (const l of lines) {
    if (fence) {
      if (fenceClose(l, fence)) fence = null;
    } else {
      if (size >= MD_PIECE && (isBlank(l) || (indentOf(l) === 0 && startsBlock(l)))) {
        out.push(cur.join('\n'));
        cur = [];
        size = 0;
      }
      fence = fenceOpen(l);
    }
    cur.push(l);
    size += l.length + 1;
  }
  out.push(cur.join('\n'));
  return out;
}

function isBlank(l) {
  return l.trim() === '';
}

function indentOf(l) {
  let n = 0;
  while (n < l.length && l[n] === ' ') n += 1;
  return n;
}

function startsBlock(l) {
  return !!(fenceOpen(l) || heading(l) || isRule(l) || quoteLine(l) !== null || listItem(l));
}

function fenceOpen(l) {
  const ind = indentOf(l);
  if (ind > 3) return null;
  const c = l[ind];
  if (c !== '`' && c !== '~') return null;
  let n = 0;
  while (l[ind + n] === c) n += 1;
  if (n < 3) return null;
  if (c === '`' && l.indexOf('`', ind + n) >= 0) return null;
  return { c, n };
}

function fenceClose(l, f) {
  const t = l.trim();
  if (t.length < f.n || indentOf(l) > 3) return false;
  for (const ch of t) if (ch !== f.c) return false;
  return true;
}

function heading(l) {
  const ind = indentOf(l);
  if (ind > 3) return null;
  let n = 0;
  while (l[ind + n] === '#') n += 1;
  if (n < 1 || n > 6) return null;
  const rest = l.slice(ind + n);
  if (rest !== '' && rest[0] !== ' ' && rest[0] !== '\t') return null;
  let text = rest.trim();
  // An optional closing run of # after a space.
  let end = text.length;
  while (end > 0 && text[end - 1] === '#') end -= 1;
  if (end === 0) text = '';
  else if (end < text.length && (text[end - 1] === ' ' || text[end - 1] === '\t')) text = text.slice(0, end).trim();
  return { level: n, text };
}

function isRule(l) {
  if (indentOf(l) > 3) return false;
  const t = l.replace(/[ \t]/g, '');
  if (t.length < 3) return false;
  const c = t[0];
  if (c !== '-' && c !== '*' && c !== '_') return false;
  for (const ch of t) if (ch !== c) return false;
  return true;
}

function quoteLine(l) {
  const ind = indentOf(l);
  if (ind > 3 || l[ind] !== '>') return null;
  let rest = l.slice(ind + 1);
  if (rest[0] === ' ') rest = rest.slice(1);
  return rest;
}

const ITEM = /^( {0,9})([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
function listItem(l) {
  const m = ITEM.exec(l);
  if (!m) return null;
  const ordered = /\d/.test(m[2][0]);
  return { indent: m[1].length, ordered, start: ordered ? parseInt(m[2], 10) : 1, text: m[3] || '' };
}

// inline renders one paragraph's text: code spans, emphasis, links.
// A line break in the text is a line break on the screen.
const AUTOLINK = /<(https?:\/\/[^\s<>]{1,2048})>/iy;
function inline(s, depth, noLinks) {
  const out = [];
  let buf = '';
  const flush = () => {
    if (buf) out.push(document.createTextNode(buf));
    buf = '';
  };
  const n = s.length;
  let i = 0;
  while (i < n) {
    const c = s[i];
    if (c === '\\' && i + 1 < n && PUNCT.includes(s[i + 1])) {
      buf += s[i + 1];
      i += 2;
      continue;
    }
    if (c === '\n') {
      flush();
      out.push(el('br'));
      i += 1;
      continue;
    }
    if (c === '`') {
      let run = 1;
      while (s[i + run] === '`') run += 1;
      const close = findTicks(s, i + run, run);
      if (close >= 0) {
        flush();
        let code = s.slice(i + run, close).replace(/\n/g, ' ');
        if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ' && code.trim() !== '') code = code.slice(1, -1);
        out.push(el('code', null, code));
        i = close + run;
        continue;
      }
      buf += s.slice(i, i + run);
      i += run;
      continue;
    }
    if (c === '[' && !noLinks && depth < MD_DEPTH) {
      const link = parseLink(s, i);
      if (link) {
        flush();
        const words = inline(link.text, depth + 1, true);
        const u = webURL(link.url, true);
        if (u) {
          out.push(anchor(u, words));
          const note = hostNote(u, link.text);
          if (note) out.push(note);
        } else {
          out.push(el('span', { class: 'md-nolink' }, words));
          out.push(el('span', { class: 'host' }, ' (link removed: not a web address)'));
        }
        i = link.end;
        continue;
      }
    }
    if (c === '<' && !noLinks) {
      AUTOLINK.lastIndex = i;
      const m = AUTOLINK.exec(s);
      const u = m && webURL(m[1], true);
      if (u) {
        flush();
        out.push(anchor(u, m[1]));
        i = AUTOLINK.lastIndex;
        continue;
      }
    }
    if ((c === '*' || c === '_') && depth < MD_DEPTH) {
      const em = parseEmphasis(s, i);
      if (em) {
        flush();
        out.push(el(em.strong ? 'strong' : 'em', null, inline(s.slice(em.from, em.to), depth + 1, noLinks)));
        i = em.end;
        continue;
      }
    }
    buf += c;
    i += 1;
  }
  flush();
  return out;
}

// findTicks finds a run of exactly run backticks at or after from.
function findTicks(s, from, run) {
  const limit = Math.min(s.length, from + MD_WINDOW * 4);
  let i = from;
  while (i < limit) {
    if (s[i] !== '`') {
      i += 1;
      continue;
    }
    let k = 0;
    while (s[i + k] === '`') k += 1;
    if (k === run) return i;
    i += k;
  }
  return -1;
}

// parseLink reads [text](url "title") at i.
function parseLink(s, i) {
  let j = i + 1;
  let depth = 1;
  const limit = Math.min(s.length, i + MD_WINDOW);
  while (j < limit) {
    const c = s[j];
    if (c === '\\') {
      j += 2;
      continue;
    }
    if (c === '[') depth += 1;
    else if (c === ']') {
      depth -= 1;
      if (depth === 0) break;
    }
    j += 1;
  }
  if (j >= limit || s[j] !== ']' || s[j + 1] !== '(') return null;
  let k = j + 2;
  while (s[k] === ' ') k += 1;
  let url = '';
  const urlLimit = Math.min(s.length, k + LINK_MAX + 2);
  if (s[k] === '<') {
    const close = s.indexOf('>', k + 1);
    if (close < 0 || close > urlLimit) return null;
    url = s.slice(k + 1, close);
    k = close + 1;
  } else {
    let parens = 0;
    const start = k;
    while (k < urlLimit) {
      const c = s[k];
      if (c === ' ' || c === '\n' || c === '\t') break;
      if (c === '(') parens += 1;
      if (c === ')') {
        if (parens === 0) break;
        parens -= 1;
      }
      k += 1;
    }
    url = s.slice(start, k);
  }
  while (s[k] === ' ') k += 1;
  const q = s[k];
  if (q === '"' || q === "'") {
    const close = s.indexOf(q, k + 1);
    if (close < 0 || close - k > MD_WINDOW) return null;
    k = close + 1;
    while (s[k] === ' ') k += 1;
  }
  if (s[k] !== ')') return null;
  return { text: s.slice(i + 1, j), url, end: k + 1 };
}

function isWordChar(c) {
  return c !== undefined && /[\p{L}\p{N}]/u.test(c);
}

function isSpace(c) {
  return c === undefined || c === ' ' || c === '\t' || c === '\n';
}

// parseEmphasis reads *em*, _em_, **strong** or __strong__ at i. An
// underscore inside a word (snake_case) is a character.
function parseEmphasis(s, i) {
  const c = s[i];
  if (c === '_' && isWordChar(s[i - 1])) return null;
  let run = 0;
  while (s[i + run] === c) run += 1;
  const strong = run >= 2;
  const width = strong ? 2 : 1;
  const from = i + width;
  if (isSpace(s[from])) return null;
  const limit = Math.min(s.length, from + MD_WINDOW);
  for (let k = from + 1; k < limit; k += 1) {
    if (s[k] !== c) continue;
    let r = 0;
    while (s[k + r] === c) r += 1;
    // A run closes when it follows a non-space, is wide enough, and (for
    // _) does not go on into a word. It closes at its end, so ***x*** is
    // strong around *x*; inside *...* a run of two is a nested strong.
    if (!isSpace(s[k - 1]) && r >= width && !(c === '_' && isWordChar(s[k + r])) && (strong || r !== 2)) {
      const close = k + r - width;
      return { strong, from, to: close, end: close + width };
    }
    k += r - 1;
  }
  return null;
}
