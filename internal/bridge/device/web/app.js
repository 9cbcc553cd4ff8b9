// Collie's web app: what a paired phone or browser shows.
//
// Rules this file keeps (spec X1, X6, D6, D7):
//  - Agent text becomes DOM text nodes only (textContent, append of a
//    string, attribute values). Nothing here parses HTML; the page's
//    Content-Security-Policy also turns on Trusted Types, so a string
//    handed to an HTML sink would throw.
//  - Links open only web addresses: https for link items, http(s) inside
//    markdown; always rel="noopener noreferrer" and target="_blank".
//  - Writes, pairing included, carry the Collie-Write header and go to
//    this page's own origin;
//    the credential is an HttpOnly cookie this script never sees.
//  - "Always allow" takes a second tap on a separate button, which stays
//    disabled for a moment so a double tap cannot confirm it by accident.
'use strict';
(function () {
  const API = '/api/v1';
  const SEND_MAX = 32768; // X4: text sent to an agent is 1 to 32768 bytes
  const LINK_MAX = 2048; // X6
  const BELT_MAX = 4; // D2
  const CONFIRM_DELAY = 600; // ms before the always-allow confirmation can be tapped
  const SEP = ' '; // joins ids into keys: an id never holds a space (X5)
  // A text longer than this (characters or lines) is folded on its card.
  const FOLD_CHARS = 360;
  const FOLD_LINES = 8;
  const FOLD_PART = 160; // characters of its head, and of its tail, left in view
  const PAIRED_FLAG = 'collie.paired'; // not a secret: only "this browser paired once"

  const main = document.getElementById('main');
  const conn = document.getElementById('conn');
  const utf8 = new TextEncoder();

  // ---------------------------------------------------------------- DOM

  // el builds an element. Attribute names are always literals from this
  // file; values may be agent text and are set as attribute values only.
  // Children that are strings become text nodes.
  function el(tag, attrs, ...children) {
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

  function add(parent, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      parent.append(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return parent;
  }

  function button(label, attrs, onclick) {
    return el('button', Object.assign({ type: 'button', onclick }, attrs), label);
  }

  let idSeq = 0;
  function uid(prefix) {
    idSeq += 1;
    return prefix + '-' + idSeq;
  }

  function bytes(s) {
    return utf8.encode(s).length;
  }

  // sync makes parent's children exactly nodes, touching only what
  // differs, so a focused input that did not change keeps its focus.
  // Nodes that stay are never moved when others come or go before them:
  // moving a conversation would make the browser style and lay it out
  // again whole.
  function sync(parent, nodes) {
    const want = new Set(nodes);
    for (const ch of Array.from(parent.childNodes)) if (!want.has(ch)) ch.remove();
    let cur = parent.firstChild;
    for (const n of nodes) {
      if (cur === n) cur = cur.nextSibling;
      else parent.insertBefore(n, cur);
    }
  }

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

  function setConn(text, cls) {
    conn.textContent = text;
    conn.className = 'conn ' + (cls || '');
  }

  // ---------------------------------------------------------------- links

  // webURL returns a URL when raw is a web address that may be opened:
  // https (or http when allowed), a host, no user name or password, no
  // spaces, control or invisible characters, at most LINK_MAX characters.
  const BAD_URL_CHARS = /[\s\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u{e0000}-\u{e007f}]/u;
  function webURL(raw, allowHTTP) {
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

  function anchor(u, children) {
    return el('a', { href: u.href, rel: 'noopener noreferrer', target: '_blank', referrerpolicy: 'no-referrer' }, children);
  }

  // hostNote shows where a link goes when its words do not say it.
  function hostNote(u, shown) {
    if (shown === u.href || shown === u.host) return null;
    return el('span', { class: 'host' }, ' (' + u.host + ')');
  }

  // ---------------------------------------------------------------- markdown

  // A small markdown renderer that builds DOM nodes: headings, lists,
  // block quotes, fenced code, rules, paragraphs; inline code spans,
  // emphasis, strong, links and autolinks. Anything else, raw HTML
  // included, is shown as its characters (X6). Every search is bounded, so
  // hostile text cannot make it slow.
  const MD_DEPTH = 6;
  const MD_WINDOW = 1024;
  const PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';

  function renderMarkdown(src, depth) {
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
  function mdPieces(src) {
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

  // ---------------------------------------------------------------- API

  // call makes one request to the device API. The reply's error message,
  // when there is one, is a sentence for the user. It never waits for
  // drawing: a tap's write leaves at once.
  async function call(method, path, body, etag) {
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
    return { ok: resp.ok, status: resp.status, data, code: err && typeof err.code === 'string' ? err.code : '', message };
  }

  function agentPath(agent, write) {
    return '/agents/' + encodeURIComponent(agent) + '/' + write;
  }

  function requestId() {
    return crypto.randomUUID();
  }

  // ---------------------------------------------------------------- pairing

  let view = 'loading';

  // takeSecret reads #pair=<secret> and removes it from the address bar
  // and history at once, so it is not left behind for anyone to copy.
  function takeSecret() {
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

  async function showPairing(secret) {
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
  function showRefused(r) {
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
  async function enter() {
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
    loaded = false;
    stateRev = '';
    eventRev = '';
    order = [];
    agents.clear();
    convs.clear();
    pending.clear();
    setView('main', el('p', { class: 'muted' }, 'Loading…'));
    notifyCheck().catch(() => drawNotify('off'));
    openStream();
    await refresh();
  }

  // ---------------------------------------------------------------- live updates

  let es = null;
  let retryTimer = 0;
  let retryDelay = 1000;
  let checking = false;

  function openStream() {
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

  function closeStream() {
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
  let loaded = false; // a whole state was read
  let stateRev = ''; // the ETag of the state the page holds whole, unquoted
  let eventRev = ''; // the revision the last change event named
  let order = []; // agent names, as /api/v1/state lists them
  const agents = new Map(); // agent name → outline agent
  const convs = new Map(); // conversation key → { conv, rev }
  const pending = new Map(); // parts to read: key → { agent, id (a conversation) or undefined (the outline) }
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

  function refresh() {
    wantAll = true;
    return pump();
  }

  // ---------------------------------------------------------------- drawing in slices

  // Drawing never holds the page for long: a pass draws the page's frame
  // (agents, conversation heads, questions, composers) and reuses every
  // item whose content did not change; markdown items that changed are
  // drawn as jobs, in slices of at most SLICE_MS, the conversations on
  // screen first. Taps and typing run between slices, and a write is sent
  // before anything is drawn for it.
  const SLICE_MS = 8;
  const jobs = []; // { ck: conversation key, run }
  let passTimer = 0;
  let workTimer = 0;
  const onScreen = new Set(); // conversation keys on screen
  const seenObserver = 'IntersectionObserver' in window ? new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (e.isIntersecting) onScreen.add(e.target.ck);
      else onScreen.delete(e.target.ck);
    }
  }) : null;

  // render asks for a pass soon; passes are coalesced.
  function render() {
    if (!passTimer) passTimer = setTimeout(pass, 0);
  }

  // renderNow draws at once, for a handler that moves focus next.
  function renderNow() {
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

  let me = {};
  const agentNodes = new Map(); // agent name → section
  const convNodes = new Map(); // conversation key → { sig, node, items, itemCache }
  const convVersion = new Map(); // conversation key → counter of page-side changes
  const cards = new Map(); // question key → { busy, error, done, confirm }
  const agentMsgs = new Map(); // agent name → { text, error }
  const convMsgs = new Map(); // conversation key → { text, error }
  const drafts = new Map(); // focus key → text typed so far
  const openDetails = new Set(); // tool-call keys whose output is open
  const renaming = new Set(); // conversation keys with the rename form open
  const busy = new Set(); // keys of writes in flight

  function convKey(agent, conv) {
    return agent + SEP + conv.id;
  }

  function questionKey(agent, conv, q) {
    return convKey(agent, conv) + SEP + q.id + SEP + q.revision;
  }

  function touch(key) {
    convVersion.set(key, (convVersion.get(key) || 0) + 1);
  }

  function card(key) {
    let c = cards.get(key);
    if (!c) {
      c = {};
      cards.set(key, c);
    }
    return c;
  }

  function list(v) {
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

  // ---------------------------------------------------------------- items

  function renderItem(ctx, it) {
    if (!it || typeof it !== 'object') return null;
    const text = typeof it.text === 'string' ? it.text : '';
    const data = { item: typeof it.id === 'string' ? it.id : '' };
    switch (it.kind) {
      case 'text': {
        const user = it.role === 'user';
        return el('div', { class: 'item text ' + (user ? 'from-user' : 'from-agent'), data },
          el('p', { class: 'who' }, user ? 'You' : 'Agent'),
          el('p', { class: 'body' }, text));
      }
      case 'markdown':
        return el('div', { class: 'item md', data }, renderMarkdown(text));
      case 'code':
        return el('figure', { class: 'item code', data },
          typeof it.language === 'string' && it.language ? el('figcaption', { class: 'muted small' }, it.language) : null,
          el('pre', null, el('code', null, text)));
      case 'link': {
        const u = webURL(it.url, false);
        if (!u) {
          return el('p', { class: 'item link removed', data }, 'A link was removed: only https:// addresses open here.');
        }
        const words = text || u.href;
        return el('p', { class: 'item link', data }, anchor(u, words), hostNote(u, words));
      }
      case 'tool-call': {
        const t = it.tool && typeof it.tool === 'object' ? it.tool : {};
        const key = ctx.key + SEP + data.item;
        const status = typeof t.status === 'string' && t.status ? t.status : '';
        const d = el('details', { class: 'item tool', data },
          el('summary', null,
            el('span', { class: 'tool-name' }, t.name || 'tool'),
            status ? el('span', { class: 'badge st-' + (['running', 'done', 'failed'].includes(status) ? status : 'other') }, status) : null,
            t.summary ? el('span', { class: 'tool-summary' }, t.summary) : null),
          t.output ? el('pre', { class: 'tool-output' }, el('code', null, t.output)) : el('p', { class: 'muted small' }, 'No output.'));
        if (openDetails.has(key)) d.open = true;
        d.addEventListener('toggle', () => {
          if (d.open) openDetails.add(key);
          else openDetails.delete(key);
        });
        return d;
      }
      default:
        return null; // images and files are not items (X6); unknown kinds are not drawn
    }
  }

  // ---------------------------------------------------------------- questions

  function renderQuestion(ctx, q) {
    if (!q || typeof q !== 'object' || typeof q.id !== 'string') return null;
    const qk = questionKey(ctx.agent, ctx.conv, q);
    const cs = cards.get(qk) || {};
    const titleId = uid('q');
    const fk = (what) => qk + SEP + what;
    const locked = !!(cs.busy || cs.done);
    const answer = (payload, label, always, confirm) => sendAnswer(ctx, q, qk, payload, label, always, confirm);
    let answers = null;
    switch (q.kind) {
      case 'yes-no': {
        const row = [
          button('Yes', { class: 'primary', data: { answer: 'yes', focus: fk('yes') }, 'aria-disabled': locked ? 'true' : null }, () => answer({ optionIds: ['yes'] }, 'Yes')),
          button('No', { class: 'secondary', data: { answer: 'no', focus: fk('no') }, 'aria-disabled': locked ? 'true' : null }, () => answer({ optionIds: ['no'] }, 'No')),
        ];
        answers = [el('div', { class: 'row answers' }, row)];
        if (q.allowAlways) {
          answers.push(el('div', { class: 'row always' },
            button('Always allow…', { class: 'warn-btn', data: { answer: 'always', focus: fk('always') }, 'aria-disabled': locked || cs.confirm ? 'true' : null, 'aria-describedby': titleId + '-always' },
              () => answer({ optionIds: ['yes'] }, 'Always allow', true)),
            el('span', { id: titleId + '-always', class: 'muted small' }, 'Lets later calls like this through without asking. Needs a second tap.')));
        }
        break;
      }
      case 'choice':
        answers = [el('div', { class: 'row answers choices', role: 'group', 'aria-labelledby': titleId },
          list(q.options).map((o) => button(o.label || o.id, { class: 'secondary', data: { option: o.id, focus: fk('opt' + SEP + o.id) }, 'aria-disabled': locked ? 'true' : null },
            () => answer({ optionIds: [o.id] }, o.label || o.id))))];
        break;
      case 'line': {
        const id = uid('line');
        const input = el('input', { id, type: 'text', autocomplete: 'off', data: { focus: fk('line') } });
        input.value = drafts.get(fk('line')) || '';
        input.addEventListener('input', () => drafts.set(fk('line'), input.value));
        const form = el('form', { class: 'line-form', novalidate: true },
          el('label', { for: id }, 'Your answer'),
          el('div', { class: 'row' }, input, el('button', { type: 'submit', class: 'primary', data: { focus: fk('line-send') } }, 'Send answer')));
        form.addEventListener('submit', (ev) => {
          ev.preventDefault();
          const err = checkText(input.value, 'The answer');
          if (err) return cardError(ctx, qk, err);
          answer({ text: input.value }, 'your answer');
        });
        answers = [form];
        break;
      }
      case 'form': {
        const inputs = list(q.fields).map((f) => {
          const id = uid('field');
          const k = fk('field' + SEP + f.id);
          const input = el('input', { id, type: 'text', autocomplete: 'off', data: { focus: k, field: f.id } });
          input.value = drafts.get(k) || '';
          input.addEventListener('input', () => drafts.set(k, input.value));
          return { f, input, node: el('div', { class: 'field' }, el('label', { for: id }, f.label || f.id), input) };
        });
        const form = el('form', { class: 'ask-form', novalidate: true }, inputs.map((x) => x.node),
          el('button', { type: 'submit', class: 'primary', data: { focus: fk('form-send') } }, 'Send answers'));
        form.addEventListener('submit', (ev) => {
          ev.preventDefault();
          const values = {};
          for (const x of inputs) {
            const err = checkText(x.input.value, '“' + (x.f.label || x.f.id) + '”');
            if (err) {
              x.input.focus();
              return cardError(ctx, qk, err);
            }
            values[x.f.id] = x.input.value;
          }
          answer({ values }, 'your answers');
        });
        answers = [form];
        break;
      }
      default:
        answers = [el('p', { class: 'muted' }, 'This page cannot show a question of this kind; answer it on the computer.')];
    }
    let confirm = null;
    if (cs.confirm) {
      const sc = cs.confirm.scope && typeof cs.confirm.scope === 'object' ? cs.confirm.scope : null;
      const ready = Date.now() >= cs.confirm.readyAt;
      const details = [];
      if (sc) {
        if (sc.text) details.push(el('p', { class: 'scope-text' }, sc.text));
        const dl = el('dl', { class: 'scope' });
        if (sc.tool) add(dl, [el('dt', null, 'Tool'), el('dd', null, sc.tool)]);
        add(dl, [el('dt', null, 'Commands'), el('dd', null, sc.commandPrefix ? 'starting with “' + sc.commandPrefix + '”' : 'every command of this tool')]);
        if (sc.durationSeconds > 0) add(dl, [el('dt', null, 'For'), el('dd', null, duration(sc.durationSeconds))]);
        details.push(dl);
      } else {
        details.push(el('p', null, 'The agent did not say what this would let through.'));
      }
      confirm = el('div', { class: 'confirm', role: 'group', 'aria-label': 'Confirm always allow' },
        el('p', { class: 'confirm-title' }, sentence(cs.confirm.message || 'always allow lets every later call in this scope through unasked.')),
        details,
        cs.confirm.expires ? el('p', { class: 'muted small' }, 'Confirm before ' + clock(cs.confirm.expires) + '; after that, tap Always allow again.') : null,
        el('div', { class: 'row' },
          button('Confirm always allow', { class: 'danger', data: { answer: 'confirm-always', focus: fk('confirm') }, disabled: !ready || cs.busy },
            () => answer({ optionIds: ['yes'] }, 'Always allow', true, cs.confirm)),
          button('Cancel', { class: 'secondary', data: { focus: fk('cancel') } }, () => {
            const c = cards.get(qk);
            if (c) c.confirm = null;
            touch(ctx.key);
            render();
          })));
    }
    let status = '';
    if (cs.busy) status = 'Sending…';
    else if (cs.done) status = cs.done;
    return el('section', { class: 'question' + (cs.done ? ' done' : ''), 'aria-labelledby': titleId, 'aria-busy': cs.busy ? 'true' : null, data: { question: q.id, qkey: qk } },
      el('h4', { id: titleId, tabindex: '-1' }, q.title || q.id),
      q.shortened ? el('p', { class: 'badge shortened' }, 'Text shortened') : null,
      q.rationale ? folded(q.rationale, 'rationale', fk('rationale')) : null,
      answers,
      typeof q.detail === 'string' && q.detail ? wholeText(q.detail, fk('detail')) : null,
      confirm,
      el('p', { class: 'msg ok', role: 'status' }, status),
      el('p', { class: 'msg error', role: 'alert' }, cs.error || ''));
  }

  // folded draws a long text (a rationale, a tool's input) as its head and
  // its tail with the rest one tap away, so a question's answers stay right
  // under its title on a phone (X3: nothing is hidden without saying so).
  // key keeps the fold open across renders.
  function folded(text, cls, key) {
    const lines = text.split('\n');
    if (text.length <= FOLD_CHARS && lines.length <= FOLD_LINES) return el('p', { class: cls }, text);
    const head = foldEnd(lines.slice(0, someLines(lines)).join('\n'), FOLD_PART, false);
    const tail = foldEnd(lines.slice(lines.length - someLines(lines.slice().reverse())).join('\n'), FOLD_PART, true);
    if (head.length + tail.length + 1 >= text.length) return el('p', { class: cls }, text);
    const middle = text.slice(head.length, text.length - tail.length);
    const hidden = middle.split('\n').length - 1;
    const what = hidden > 1 ? ' the ' + hidden + ' lines between' : ' the ' + middle.length + ' characters between';
    const d = foldable('fold', key, what, el('span', { class: 'fold-middle' }, middle.replace(/^\n/, '').replace(/\n$/, '')));
    return el('div', { class: cls + ' folded' }, el('span', { class: 'fold-head' }, head), d, el('span', { class: 'fold-tail' }, tail));
  }

  // wholeText is a question's detail, the whole text a yes would run, one
  // tap away: the rationale shows only its head and tail (X3).
  function wholeText(text, key) {
    const n = bytes(text);
    return foldable('fold whole', key, ' the whole text (' + (n >= 10240 ? Math.round(n / 1024) + ' KB' : n + ' bytes') + ')',
      el('pre', { class: 'whole-text' }, el('code', null, text)));
  }

  // foldable is a details element whose summary says "Show" or "Hide"
  // what, open across renders while key is in openDetails.
  function foldable(cls, key, what, body) {
    const sum = el('summary', null, 'Show' + what);
    const d = el('details', { class: cls, data: { focus: key } }, sum, body);
    const label = () => { sum.textContent = (d.open ? 'Hide' : 'Show') + what; };
    if (openDetails.has(key)) d.open = true;
    label();
    d.addEventListener('toggle', () => {
      if (d.open) openDetails.add(key);
      else openDetails.delete(key);
      label();
    });
    return d;
  }

  // someLines is how many of lines, from the first, hold three that are not
  // blank: what a fold leaves in view at each end.
  function someLines(lines) {
    let n = 0;
    let seen = 0;
    while (n < lines.length && seen < 3) {
      if (lines[n].trim() !== '') seen += 1;
      n += 1;
    }
    return n;
  }

  // foldEnd is at most n characters of s: its start, or its end when
  // fromEnd; the head stays a prefix of s and the tail a suffix.
  function foldEnd(s, n, fromEnd) {
    if (s.length <= n) return s;
    // At a space where one is near, so no word is cut in two.
    if (fromEnd) {
      const part = s.slice(s.length - n);
      const sp = part.indexOf(' ');
      return sp >= 0 && sp < 24 ? part.slice(sp + 1) : part;
    }
    const part = s.slice(0, n);
    const sp = part.lastIndexOf(' ');
    return sp > n - 24 ? part.slice(0, sp + 1) : part;
  }

  function checkText(s, what) {
    const n = bytes(s);
    if (n === 0) return what + ' is empty; type something first.';
    if (n > SEND_MAX) return what + ' is ' + n + ' bytes; the limit is ' + SEND_MAX + '. Shorten it.';
    return '';
  }

  function cardError(ctx, qk, text) {
    card(qk).error = text;
    touch(ctx.key);
    render();
  }

  // sendAnswer posts an answer. "Always allow" goes twice: the first
  // request returns 428 with a confirmation token and the scope; only the
  // tap on "Confirm always allow" sends it back (D7).
  async function sendAnswer(ctx, q, qk, payload, label, always, confirm) {
    const cs = card(qk);
    if (cs.busy || cs.done) return;
    if (always && cs.confirm && !confirm) return; // the confirmation is on screen already
    if (confirm && Date.now() < confirm.readyAt) return;
    const body = Object.assign({
      requestId: confirm ? confirm.requestId : requestId(),
      conversation: ctx.conv.id,
      question: q.id,
      revision: q.revision,
    }, payload);
    if (always) body.always = true;
    if (confirm) body.confirm = confirm.token;
    cs.busy = true;
    cs.error = '';
    touch(ctx.key);
    render();
    const r = await call('POST', agentPath(ctx.agent, 'answer'), body);
    const c = card(qk);
    c.busy = false;
    if (r.status === 401) return showRefused(r);
    if (r.ok) {
      c.confirm = null;
      c.done = 'Sent: ' + label + '.';
      // The agent takes an answered question away at once, and its card
      // with it; the conversation keeps saying what was sent.
      convMsgs.set(ctx.key, { text: 'Sent: ' + label + ' to “' + (q.title || q.id) + '”.' });
      for (const k of drafts.keys()) if (k.startsWith(qk + SEP)) drafts.delete(k);
    } else if (r.status === 428 && r.code === 'confirm-always' && r.data && typeof r.data.confirm === 'string') {
      const offer = { token: r.data.confirm, expires: r.data.expires, scope: r.data.scope, message: r.message, requestId: body.requestId, readyAt: Date.now() + CONFIRM_DELAY };
      c.confirm = offer;
      setTimeout(() => {
        touch(ctx.key);
        render();
      }, CONFIRM_DELAY + 20);
      // When the bridge's token expires, the offer goes: tap Always allow again.
      const left = new Date(offer.expires).getTime() - Date.now();
      if (left > 0 && left < 24 * 3600 * 1000) {
        setTimeout(() => {
          const now = cards.get(qk);
          if (!now || now.confirm !== offer || now.busy) return;
          now.confirm = null;
          now.error = 'The confirmation expired; tap Always allow again.';
          touch(ctx.key);
          render();
        }, left);
      }
    } else {
      c.confirm = null;
      c.error = r.message;
    }
    touch(ctx.key);
    render();
  }

  function sentence(s) {
    return s ? s[0].toUpperCase() + s.slice(1) : s;
  }

  function duration(sec) {
    const units = [[86400, 'day'], [3600, 'hour'], [60, 'minute'], [1, 'second']];
    for (const [n, name] of units) {
      if (sec >= n && sec % n === 0) {
        const k = sec / n;
        return k + ' ' + name + (k === 1 ? '' : 's');
      }
    }
    return sec + ' seconds';
  }

  function clock(iso) {
    const d = new Date(iso);
    if (isNaN(d.getTime())) return String(iso);
    return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  }

  // ---------------------------------------------------------------- writes

  function setAgentMsg(agent, text, error) {
    agentMsgs.set(agent, { text, error });
    render();
  }

  async function tapBelt(agent, b) {
    const k = 'belt' + agent + b.id;
    if (busy.has(k)) return;
    busy.add(k);
    setAgentMsg(agent, 'Sending “' + (b.label || b.id) + '”…');
    const r = await call('POST', agentPath(agent, 'action'), { requestId: requestId(), action: b.id });
    busy.delete(k);
    if (r.status === 401) return showRefused(r);
    setAgentMsg(agent, r.ok ? 'Done: “' + (b.label || b.id) + '” was sent.' : r.message, !r.ok);
  }

  async function tapStarter(agent, s) {
    const k = 'starter' + agent + s.id;
    if (busy.has(k)) return;
    busy.add(k);
    setAgentMsg(agent, 'Starting “' + (s.label || s.id) + '”…');
    const r = await call('POST', agentPath(agent, 'starter'), { requestId: requestId(), starter: s.id });
    busy.delete(k);
    if (r.status === 401) return showRefused(r);
    setAgentMsg(agent, r.ok ? 'Started “' + (s.label || s.id) + '”.' : r.message, !r.ok);
  }

  async function convWrite(ctx, write, body, doing, done) {
    const k = ctx.key + SEP + write;
    if (busy.has(k)) return false;
    busy.add(k);
    convMsgs.set(ctx.key, { text: doing });
    touch(ctx.key);
    render();
    const r = await call('POST', agentPath(ctx.agent, write), Object.assign({ requestId: requestId() }, body));
    busy.delete(k);
    if (r.status === 401) {
      showRefused(r);
      return false;
    }
    convMsgs.set(ctx.key, r.ok ? { text: done } : { text: r.message, error: true });
    touch(ctx.key);
    render();
    return r.ok;
  }

  function renderComposer(ctx) {
    const fk = ctx.key + SEP + 'draft';
    const id = uid('send');
    const countId = id + '-count';
    const ta = el('textarea', { id, rows: '2', data: { focus: fk }, 'aria-describedby': countId });
    ta.value = drafts.get(fk) || '';
    const steer = el('input', { type: 'checkbox', id: id + '-steer', data: { focus: fk + '-steer' } });
    steer.checked = drafts.get(fk + '-steer') === '1';
    const count = el('span', { id: countId, class: 'count muted small', 'aria-live': 'polite' });
    const showCount = () => {
      const n = bytes(ta.value);
      count.textContent = n > SEND_MAX * 0.9 ? n + ' / ' + SEND_MAX + ' bytes' : '';
      count.className = 'count small ' + (n > SEND_MAX ? 'bad' : 'muted');
    };
    showCount();
    ta.addEventListener('input', () => {
      drafts.set(fk, ta.value);
      showCount();
    });
    steer.addEventListener('change', () => drafts.set(fk + '-steer', steer.checked ? '1' : ''));
    const form = el('form', { class: 'composer', novalidate: true },
      el('label', { for: id }, 'Message to this conversation'),
      ta,
      el('div', { class: 'row' },
        el('label', { class: 'check', for: id + '-steer' }, steer, ' Steer the running turn'),
        count,
        el('button', { type: 'submit', class: 'primary', data: { focus: fk + '-send' } }, 'Send')));
    const submit = async (ev) => {
      if (ev) ev.preventDefault();
      const err = checkText(ta.value, 'The message');
      if (err) {
        convMsgs.set(ctx.key, { text: err, error: true });
        touch(ctx.key);
        render();
        return;
      }
      const body = { conversation: ctx.conv.id, text: ta.value };
      if (steer.checked) body.steer = true;
      if (await convWrite(ctx, 'send', body, 'Sending…', 'Sent.')) {
        drafts.delete(fk);
        drafts.delete(fk + '-steer');
        touch(ctx.key);
        render();
      }
    };
    form.addEventListener('submit', submit);
    ta.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) submit(ev);
    });
    return form;
  }

  // renderConvTools folds a conversation's composer and its actions (Stop,
  // Close or Reopen, Rename) into one line until tapped (open,
  // they took 40% of a phone's screen under every conversation). It opens
  // by itself while a draft, a rename or a message of its own is there.
  const toolsOpen = new Set();
  function renderConvTools(ctx) {
    const fk = ctx.key + SEP;
    const busy = renaming.has(ctx.key) || (drafts.get(fk + 'draft') || '') !== '';
    const open = toolsOpen.has(ctx.key) || busy;
    const d = el('details', { class: 'conv-tools', data: { focus: fk + 'tools' } },
      el('summary', null, ctx.conv.closed ? 'Reopen or rename' : 'Message, stop, close or rename'),
      ctx.conv.closed ? null : renderComposer(ctx),
      renderConvActions(ctx));
    d.open = open;
    d.addEventListener('toggle', () => {
      if (d.open) toolsOpen.add(ctx.key);
      else toolsOpen.delete(ctx.key);
    });
    return d;
  }

  function renderConvActions(ctx) {
    const c = ctx.conv;
    const fk = (w) => ctx.key + SEP + w;
    const row = [];
    if (!c.closed) {
      row.push(button('Stop the turn', { class: 'secondary small-btn', data: { focus: fk('abort') } },
        () => convWrite(ctx, 'abort', { conversation: c.id }, 'Stopping…', 'Asked the agent to stop.')));
      row.push(button('Close', { class: 'secondary small-btn', data: { focus: fk('close') } },
        () => convWrite(ctx, 'close', { conversation: c.id }, 'Closing…', 'Closed.')));
    } else {
      row.push(button('Reopen', { class: 'secondary small-btn', data: { focus: fk('reopen') } },
        () => convWrite(ctx, 'reopen', { conversation: c.id }, 'Reopening…', 'Reopened.')));
    }
    if (!renaming.has(ctx.key)) {
      row.push(button('Rename', { class: 'secondary small-btn', data: { focus: fk('rename') } }, () => {
        renaming.add(ctx.key);
        touch(ctx.key);
        renderNow();
        const input = findFocus(fk('rename-input'));
        if (input) input.focus();
      }));
      return el('div', { class: 'row conv-actions' }, row);
    }
    const id = uid('rename');
    const input = el('input', { id, type: 'text', autocomplete: 'off', data: { focus: fk('rename-input') } });
    input.value = drafts.has(fk('rename-input')) ? drafts.get(fk('rename-input')) : (c.title || '');
    input.addEventListener('input', () => drafts.set(fk('rename-input'), input.value));
    const stop = () => {
      renaming.delete(ctx.key);
      drafts.delete(fk('rename-input'));
      touch(ctx.key);
      render();
    };
    const form = el('form', { class: 'rename', novalidate: true },
      el('label', { for: id }, 'New name'),
      el('div', { class: 'row' }, input,
        el('button', { type: 'submit', class: 'primary', data: { focus: fk('rename-save') } }, 'Save'),
        button('Cancel', { class: 'secondary', data: { focus: fk('rename-cancel') } }, stop)));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const title = input.value.trim();
      const n = bytes(title);
      if (n === 0 || n > 256) {
        convMsgs.set(ctx.key, { text: 'A name is 1 to 256 bytes.', error: true });
        touch(ctx.key);
        render();
        return;
      }
      if (await convWrite(ctx, 'rename', { conversation: c.id, title }, 'Renaming…', 'Renamed.')) stop();
    });
    return el('div', { class: 'conv-actions' }, el('div', { class: 'row' }, row), form);
  }

  // ---------------------------------------------------------------- notifications

  // Web Push (docs/device-api.md, Notifications). Offered after pairing by
  // a button: the browser's permission prompt comes only from a tap, never
  // from the page on its own. The subscription goes to the bridge as this
  // device's. The service worker shows a push and a tap on it opens the
  // app (sw-push.js); nothing in a notification answers (D6).
  const notify = {
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
  function swURL() {
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

  function drawNotify(state, message) {
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
  async function notifyCheck() {
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

  // ---------------------------------------------------------------- focus

  function findFocus(key) {
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

  // ---------------------------------------------------------------- start

  window.addEventListener('hashchange', () => {
    const s = takeSecret();
    if (s !== null) showPairing(s);
  });

  const secret = takeSecret();
  if (secret !== null) showPairing(secret);
  else enter();

  // The installable app: the service worker, whose shell part
  // (sw-shell.js) keeps the page's own files so the app opens without the
  // bridge and says it cannot be reached. Registered on every load; a
  // browser without workers just has no offline page.
  if ('serviceWorker' in navigator && window.isSecureContext) {
    navigator.serviceWorker.register(swURL(), { scope: '/' }).catch(() => {});
  }
})();
