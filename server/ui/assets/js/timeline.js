// The live event timeline of a run: one row per event, in cursor order,
// grouped by attempt. Text and data render as text, never as HTML.
import { el, fmtClock, jsonView } from './dom.js';

export class Timeline {
  constructor() {
    this.list = el('ol', { className: 'timeline', id: 'timeline', aria: { live: 'polite' } });
    this.count = 0;
    this.attempt = 0;
    this.node = el('section', { className: 'card' },
      el('h2', { text: 'Events' }),
      this.empty = el('p', { className: 'muted', text: 'No events yet.' }),
      this.list);
  }

  // add appends event (with its cursor "ATTEMPT.SEQ").
  add(ev, cursor) {
    const attempt = Number(cursor.split('.')[0]);
    if (attempt !== this.attempt) {
      this.attempt = attempt;
      this.list.append(el('li', { className: 'attempt-sep', text: `Attempt ${attempt}` }));
    }
    this.empty.hidden = true;
    this.count++;
    const follow = this.list.scrollTop + this.list.clientHeight >= this.list.scrollHeight - 4;
    this.list.append(el('li', { className: 'event', dataset: { cursor } },
      el('span', { className: 'cursor', text: cursor }),
      el('time', { text: fmtClock(ev.time_ms) }),
      el('span', { className: 'kind', text: ev.kind }),
      el('span', { className: 'text', text: ev.text || '' }),
      ev.data === undefined ? el('span') : jsonView(ev.data)));
    if (follow) this.list.scrollTop = this.list.scrollHeight;
  }
}
