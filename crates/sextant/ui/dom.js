// Small DOM helpers shared by the views: element builders, keyed table
// rows that survive refreshes (focus and typed text stay), durations.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "text") el.textContent = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An HTML element: `h("td", {"data-field": "state"}, "UP")`. */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element, same shape as `h`. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/**
 * Makes `parent`'s children one per item, in order, keyed by `key(item)`
 * (kept in `data-key`): a child made once by `make(item)` is kept and
 * handed to `update(child, item)` on every refresh, so what the user is
 * typing or focusing survives.
 */
export function keyed(parent, items, key, make, update) {
  const old = new Map();
  for (const child of parent.children) old.set(child.dataset.key, child);
  let at = 0;
  for (const item of items) {
    const k = String(key(item));
    let child = old.get(k);
    if (child) old.delete(k);
    else {
      child = make(item);
      child.dataset.key = k;
    }
    update(child, item);
    if (parent.children[at] !== child) parent.insertBefore(child, parent.children[at] || null);
    at += 1;
  }
  for (const child of old.values()) child.remove();
}

/** Replaces the text of the `[data-field=field]` inside `el`; returns it. */
export function field(el, name, text) {
  const f = el.querySelector(`[data-field="${name}"]`);
  const value = text ?? "";
  if (f && f.textContent !== String(value)) f.textContent = value;
  return f;
}

/** A duration for people: `42s`, `3m 05s`, `2h 04m`, `3d 4h`. */
export function duration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "";
  const t = Math.max(0, Math.round(seconds));
  const pad = (n) => String(n).padStart(2, "0");
  if (t < 60) return `${t}s`;
  if (t < 3600) return `${Math.floor(t / 60)}m ${pad(t % 60)}s`;
  if (t < 86400) return `${Math.floor(t / 3600)}h ${pad(Math.floor((t % 3600) / 60))}m`;
  return `${Math.floor(t / 86400)}d ${Math.floor((t % 86400) / 3600)}h`;
}

/** Seconds since an RFC 3339 time (null for none). */
export function secondsSince(rfc3339) {
  if (!rfc3339) return null;
  const ms = Date.parse(rfc3339);
  return Number.isFinite(ms) ? Math.max(0, (Date.now() - ms) / 1000) : null;
}

/** A number with at most `digits` decimals, or "" for null. */
export function num(value, digits = 1) {
  if (value === null || value === undefined) return "";
  return Number.isInteger(value) ? String(value) : value.toFixed(digits);
}
