// DOM helpers. Every string from the API is attacker-controlled (event
// text, results, prompts, agent names): it only ever becomes a text node
// or a property from a fixed list, never HTML.

const props = new Set(['className', 'id', 'type', 'name', 'value', 'placeholder', 'disabled',
  'checked', 'htmlFor', 'title', 'rows', 'min', 'max', 'required', 'open', 'selected', 'hidden',
  'autocomplete', 'spellcheck', 'maxLength']);

// el builds an HTML element. p holds properties from the list above,
// "text" (textContent), "dataset", "href" (in-page "#..." links only),
// "aria" (aria-* attributes) and "on<event>" listeners. Children are
// nodes or strings (text nodes); null and false are skipped.
export function el(tag, p, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(p || {})) {
    if (v === undefined || v === null) continue;
    if (k === 'text') e.textContent = String(v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k === 'href') e.setAttribute('href', String(v).startsWith('#') ? String(v) : '#');
    else if (k === 'aria') for (const [a, av] of Object.entries(v)) e.setAttribute('aria-' + a, String(av));
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (props.has(k)) e[k] = v;
    else throw new Error('el: property ' + k + ' is not allowed');
  }
  append(e, children);
  return e;
}

// append adds children (nodes, or strings as text nodes) to e.
export function append(e, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const svgAttrs = new Set(['x', 'y', 'x1', 'x2', 'y1', 'y2', 'width', 'height', 'viewBox', 'class',
  'd', 'points', 'text-anchor', 'dominant-baseline', 'transform', 'role', 'preserveAspectRatio', 'rx']);

// svg builds an SVG element with attributes from a fixed list; "text"
// sets its textContent and "title" adds a <title> (the tooltip).
export function svg(tag, a, ...children) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(a || {})) {
    if (v === undefined || v === null) continue;
    if (k === 'text') e.textContent = String(v);
    else if (k === 'title') e.append(svg('title', { text: v }));
    else if (svgAttrs.has(k)) e.setAttribute(k, String(v));
    else throw new Error('svg: attribute ' + k + ' is not allowed');
  }
  return append(e, children);
}

// clear replaces e's children with children (as append takes them).
export function clear(e, ...children) {
  e.replaceChildren();
  return append(e, children);
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

// fmtTime formats Unix ms as local "YYYY-MM-DD hh:mm:ss"; "" for 0.
export function fmtTime(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// fmtClock formats Unix ms as local "hh:mm:ss.mmm".
export function fmtClock(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

// fmtDuration formats a duration in ms: "850 ms", "4.2 s", "3 min 5 s", "2 h 4 min".
export function fmtDuration(ms) {
  if (ms === null || ms === undefined || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3600000) return `${Math.floor(ms / 60000)} min ${Math.floor(ms / 1000) % 60} s`;
  return `${Math.floor(ms / 3600000)} h ${Math.floor(ms / 60000) % 60} min`;
}

// jsonView shows a JSON value: short values inline, longer ones folded
// in a <details> with the pretty-printed text.
export function jsonView(v, label) {
  const text = JSON.stringify(v, null, 2);
  const flat = JSON.stringify(v);
  if (flat === undefined) return el('span', { className: 'muted', text: 'none' });
  if (flat.length <= 80 && !label) return el('code', { className: 'json', text: flat });
  const summary = label || (flat.length > 80 ? flat.slice(0, 77) + '…' : flat);
  return el('details', { className: 'json' },
    el('summary', { text: summary }),
    el('pre', { text }));
}

// stateBadge is a run state as a coloured label.
export function stateBadge(state) {
  return el('span', { className: 'state state-' + String(state).replace(/[^a-z-]/g, ''), text: state });
}

// terminal reports whether a state never changes again.
export const terminal = (s) => ['completed', 'failed', 'cancelled', 'rejected'].includes(s);

// interrupted reports whether a run waits for a resume.
export const interrupted = (s) => s === 'input-required' || s === 'auth-required';

// runDuration is a run's duration in ms: to its last update when it is
// terminal, else to now.
export function runDuration(run, now = Date.now()) {
  return (terminal(run.state) ? run.updated_ms : now) - run.created_ms;
}

// kv is a definition list of [label, value] pairs; empty values are left out.
export function kv(pairs) {
  const dl = el('dl', { className: 'kv' });
  for (const [k, v] of pairs) {
    if (v === '' || v === null || v === undefined) continue;
    dl.append(el('dt', { text: k }), el('dd', null, v));
  }
  return dl;
}
