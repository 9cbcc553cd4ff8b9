// Writes from the main view: belts, starters, the composer and a
// conversation's actions.

import { SEND_MAX, SEP, button, bytes, el, uid } from './dom.js';
import { agentPath, call, requestId, showRefused } from './pairing.js';
import { agentMsgs, busy, convMsgs, drafts, findFocus, renaming, render, renderNow, touch } from './view.js';
import { checkText } from './cards.js';

// ---------------------------------------------------------------- writes

function setAgentMsg(agent, text, error) {
  agentMsgs.set(agent, { text, error });
  render();
}

export async function tapBelt(agent, b) {
  const k = 'belt' + agent + b.id;
  if (busy.has(k)) return;
  busy.add(k);
  setAgentMsg(agent, 'Sending “' + (b.label || b.id) + '”…');
  const r = await call('POST', agentPath(agent, 'action'), { requestId: requestId(), action: b.id });
  busy.delete(k);
  if (r.status === 401) return showRefused(r);
  setAgentMsg(agent, r.ok ? 'Done: “' + (b.label || b.id) + '” was sent.' : r.message, !r.ok);
}

export async function tapStarter(agent, s) {
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
export function renderConvTools(ctx) {
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
