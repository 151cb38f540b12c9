// Problems: the core's errors next to the fields they belong to, and what a link held that was ignored.
import { $, h, clear } from './dom.js';
import { FIELD, FIELDS, fid, eid, isCustom } from './fields.js';
import { LINK_OF } from './params.js';

// The form field an error from the core belongs to: its key's field, else the field of the object or model it is in.
function errorKey(field, state) {
  if (field.startsWith('model.hf_config')) return 'hf';
  if (field.startsWith('model.')) return isCustom(state) && FIELD[field] ? field : 'model';
  if (field.startsWith('gpu.')) return FIELD[field] ? field : 'gpu';
  const key = LINK_OF[field];
  if (key && FIELD[key]) return key;
  // An object's member without a field of its own, or a model given by name whose config has the problem.
  for (const parent of ['finetune', 'inference_engine', 'checkpointing', 'teacher', 'value_model', 'reward_model'])
    if (field.startsWith(parent + '.') && FIELD[LINK_OF[parent]]) return LINK_OF[parent];
  return FIELD[field] ? field : '';
}

// The core's errors (and the page's own, in `own`: field -> message) next to their fields and in the box above the
// answer. Returns field -> messages.
export function showFieldErrors(errors, state, own) {
  const fieldErrors = new Map();
  const general = [];
  for (const [key, message] of own) fieldErrors.set(key, [message]);
  for (const e of errors) {
    const key = errorKey(String(e.field), state);
    const msg = (key === String(e.field) || !e.field ? '' : `${e.field}: `) + e.message;
    if (key) fieldErrors.set(key, [...(fieldErrors.get(key) || []), msg]);
    else general.push(msg);
  }
  for (const f of FIELDS) {
    const el = $(fid(f.key));
    const list = fieldErrors.get(f.key);
    $(eid(f.key)).textContent = list ? list.join(' · ') : '';
    if (list) el.setAttribute('aria-invalid', 'true');
    else el.removeAttribute('aria-invalid');
    $('row-' + fid(f.key)).classList.toggle('invalid', !!list);
  }
  const box = clear($('errors'));
  box.hidden = errors.length === 0 && !fieldErrors.size;
  if (!box.hidden) {
    box.append(h('p', { class: 'box-title' }, 'This configuration is not valid:'));
    const ul = h('ul');
    for (const [key, msgs] of fieldErrors) {
      const label = FIELD[key].label;
      ul.append(h('li', {}, h('button', { type: 'button', class: 'linklike', onclick: () => $(fid(key)).focus() }, label), `: ${msgs.join(' · ')}`));
    }
    for (const m of general) ul.append(h('li', {}, m));
    box.append(ul);
  }
  return fieldErrors;
}

// What a link held that the page ignored, as text.
export function showLinkProblems(linkProblems) {
  const box = clear($('link-problems'));
  box.hidden = linkProblems.length === 0;
  if (box.hidden) return;
  box.append(h('p', { class: 'box-title' }, 'Some settings in this link were ignored:'));
  const ul = h('ul');
  for (const p of linkProblems) ul.append(h('li', {}, p.param ? h('code', {}, p.param) : null, p.param ? ' ' : '', p.message));
  box.append(ul, h('button', { type: 'button', class: 'small', onclick: () => showLinkProblems([]) }, 'Dismiss'));
}
