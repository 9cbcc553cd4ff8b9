// Items and question cards, folding of long text, and answers.

import { CONFIRM_DELAY, FOLD_CHARS, FOLD_LINES, FOLD_PART, SEND_MAX, SEP, add, anchor, button, bytes, el, hostNote, uid, webURL } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { agentPath, call, requestId, showRefused } from './pairing.js';
import { card, cards, convMsgs, drafts, list, openDetails, questionKey, render, touch } from './view.js';

// ---------------------------------------------------------------- items

export function renderItem(ctx, it) {
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

export function renderQuestion(ctx, q) {
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

export function checkText(s, what) {
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
