// A run's push configurations (webhooks): list, add or replace, delete.
import { el, clear, fmtTime } from './dom.js';

// pushSection returns {node, close} for run id's push configurations.
export function pushSection(api, id) {
  const base = `/runs/${encodeURIComponent(id)}/push-configs`;
  const tbody = el('tbody');
  const err = el('p', { className: 'error' });
  const f = {
    id: el('input', { name: 'id', placeholder: 'configuration ID (a-z, 0-9, . _ -)', required: true, maxLength: 63 }),
    url: el('input', { name: 'url', type: 'url', placeholder: 'https://example.com/hook', required: true, maxLength: 2048 }),
    key: el('input', { name: 'key_id', placeholder: 'signing key ID (optional)', maxLength: 64 }),
  };
  const node = el('section', { className: 'card', id: 'push' },
    el('h2', { text: 'Push configurations' }),
    el('table', null,
      el('thead', null, el('tr', null, ['ID', 'URL', 'Key', 'Created', 'Delivered version', 'Failures', 'Last error', ''].map((h) => el('th', { text: h })))),
      tbody),
    el('form', { className: 'inline', id: 'push-form', onsubmit: add }, f.id, f.url, f.key, el('button', { type: 'submit', text: 'Add or replace' })),
    err);

  async function load() {
    try {
      const list = await api.get(base);
      clear(tbody, ...list.push_configs.map(row));
      if (list.push_configs.length === 0) tbody.append(el('tr', null, el('td', { className: 'muted', text: 'None.' })));
    } catch (e) {
      err.textContent = 'Could not read push configurations: ' + e.message;
    }
  }

  function row(c) {
    const d = c.delivery || {};
    return el('tr', { dataset: { configId: c.id } },
      el('td', { className: 'mono', text: c.id }),
      el('td', { className: 'mono', text: c.url }),
      el('td', { text: c.key_id || 'primary' }),
      el('td', { text: fmtTime(c.created_ms) }),
      el('td', { text: (d.delivered_version || 0) + (d.done ? ' (done)' : '') }),
      el('td', { text: d.failures || 0 }),
      el('td', { text: d.last_error || '' }),
      el('td', null, el('button', { type: 'button', className: 'link', text: 'Delete', onclick: () => del(c.id) })));
  }

  async function add(e) {
    e.preventDefault();
    err.textContent = '';
    try {
      const body = { url: f.url.value.trim() };
      if (f.key.value.trim()) body.key_id = f.key.value.trim();
      await api.call('PUT', `${base}/${encodeURIComponent(f.id.value.trim())}`, body);
      f.id.value = f.url.value = f.key.value = '';
      load();
    } catch (x) {
      err.textContent = 'Could not set the push configuration: ' + x.message + (x.field ? ` (${x.field})` : '');
    }
  }

  async function del(cid) {
    try {
      await api.call('DELETE', `${base}/${encodeURIComponent(cid)}`);
      load();
    } catch (x) {
      err.textContent = 'Could not delete: ' + x.message;
    }
  }

  load();
  return { node, close() {} };
}
