// Small helpers to build the DOM and format figures.

export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else if (name === 'class') element.className = value;
    else element.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export const replace = (element, ...children) => element.replaceChildren(...children.flat(Infinity).filter((c) => c != null && c !== false));

export function fmtNumber(value) {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'number') return String(value);
  return Number.isInteger(value) ? value.toLocaleString('en') : value.toLocaleString('en', { maximumFractionDigits: 1 });
}

export function fmtRate(value) {
  return value === undefined || value === null ? '' : `${fmtNumber(value)}/s`;
}

export function fmtBytes(value) {
  if (typeof value !== 'number') return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let index = 0;
  while (value >= 1024 && index < units.length - 1) { value /= 1024; index += 1; }
  return `${value.toFixed(index ? 1 : 0)} ${units[index]}`;
}

// `dig(item, 'message_stats.publish_details.rate')`
export function dig(item, path) {
  return path.split('.').reduce((value, key) => (value == null ? undefined : value[key]), item);
}

export const link = (href, text) => h('a', { href }, text);

// A table from rows and column specs: {title, value(row) -> node|text, num}.
export function table(columns, rows, { empty = 'Nothing here.' } = {}) {
  if (!rows.length) return h('p', { class: 'muted' }, empty);
  return h('table', {},
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: c.num ? 'num' : '' }, c.title)))),
    h('tbody', {}, rows.map((row) => h('tr', {}, columns.map((c) => h('td', { class: c.num ? 'num' : '' }, c.value(row)))))));
}

// A key/value list of an object's fields.
export function fields(pairs) {
  return h('table', {}, h('tbody', {}, pairs.map(([name, value]) => h('tr', {}, h('th', {}, name), h('td', {}, value)))));
}

export function errorText(error) {
  return h('p', { class: 'error', role: 'alert' }, error.body ? `${error.body.error || 'error'}: ${error.body.reason || error.message}` : String(error.message || error));
}

// Read a form's named inputs into an object.
export function formValues(form) {
  return Object.fromEntries(new FormData(form).entries());
}

export function badge(text, kind) {
  return h('span', { class: `badge ${kind || ''}` }, text);
}
