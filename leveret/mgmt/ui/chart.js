// A small SVG line chart of the API's samples (`*_details.samples`: newest first).

import { h } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
export const COLOURS = ['#2f6fb2', '#2e8b57', '#d68910', '#c0392b', '#8e44ad', '#16a085'];

function svg(tag, attrs) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, value);
  return element;
}

// A series is {label, points: [[timestampMs, value], ...]} in time order.
export function lineChart(series, { width = 560, height = 160, unit = '' } = {}) {
  const pad = { left: 44, right: 8, top: 8, bottom: 18 };
  const all = series.flatMap((s) => s.points);
  const times = all.map((p) => p[0]);
  const t0 = Math.min(...times, Date.now() - 60000);
  const t1 = Math.max(...times, t0 + 1);
  const top = Math.max(1, ...all.map((p) => p[1]));
  const x = (t) => pad.left + ((t - t0) / (t1 - t0)) * (width - pad.left - pad.right);
  const y = (v) => height - pad.bottom - (v / top) * (height - pad.top - pad.bottom);
  const root = svg('svg', { class: 'chart', width, height, viewBox: `0 0 ${width} ${height}` });
  root.append(svg('line', { class: 'axis', x1: pad.left, x2: width - pad.right, y1: y(0), y2: y(0) }));
  root.append(svg('line', { class: 'axis', x1: pad.left, x2: width - pad.right, y1: y(top), y2: y(top) }));
  for (const [value, at] of [[top, y(top) + 4], [0, y(0) + 4]]) {
    const label = svg('text', { x: pad.left - 4, y: at, 'text-anchor': 'end' });
    label.textContent = `${Number(value.toFixed(1))}${unit}`;
    root.append(label);
  }
  const span = svg('text', { x: width - pad.right, y: height - 4, 'text-anchor': 'end' });
  span.textContent = `last ${Math.round((t1 - t0) / 1000)} s`;
  root.append(span);
  series.forEach((s, index) => {
    if (!s.points.length) return;
    const d = s.points.map((p, i) => `${i ? 'L' : 'M'}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join('');
    root.append(svg('path', { d, fill: 'none', stroke: COLOURS[index % COLOURS.length], 'stroke-width': 1.5, 'data-label': s.label }));
  });
  const legend = h('div', { class: 'legend' }, series.map((s, index) => h('span', {},
    h('i', { style: `background:${COLOURS[index % COLOURS.length]}` }), `${s.label}: ${s.current ?? ''}${unit}`)));
  return h('div', {}, root, legend);
}

// Points of a counter's rate from `<name>_details.samples` (each sample is the running total).
export function ratePoints(details) {
  const samples = [...((details && details.samples) || [])].reverse();
  const points = [];
  for (let i = 1; i < samples.length; i += 1) {
    const elapsed = (samples[i].timestamp - samples[i - 1].timestamp) / 1000;
    if (elapsed > 0) points.push([samples[i].timestamp, Math.max(0, (samples[i].sample - samples[i - 1].sample) / elapsed)]);
  }
  return points;
}

// Points of a gauge (queue length) from its samples.
export function gaugePoints(details) {
  return [...((details && details.samples) || [])].reverse().map((s) => [s.timestamp, s.sample]);
}

// The chart periods the pages offer: the API's msg_rates_age / lengths_age and a step.
export const PERIODS = { '1 min': [60, 5], '10 min': [600, 5], '1 h': [3600, 60] };

export function ageQuery(period) {
  const [age, incr] = PERIODS[period] || PERIODS['1 min'];
  return `msg_rates_age=${age}&msg_rates_incr=${incr}&lengths_age=${age}&lengths_incr=${incr}`;
}

export function periodPicker(current, onChange) {
  return h('select', { 'aria-label': 'chart period', onchange: (e) => onChange(e.target.value) },
    Object.keys(PERIODS).map((p) => h('option', { value: p, selected: p === current }, p)));
}
