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

/** A `th` that sorts its table by `key` (see `listControls`). */
export function sortHeader(key, label) {
  return h("th", { "data-sort": key }, h("button", { type: "button", class: "sort", title: `sort by ${label.toLowerCase()}` }, label));
}

/** Orders two cell values: numbers by value, text as people sort it, blanks last. */
export function compare(a, b) {
  const blank = (v) => v === null || v === undefined || v === "";
  if (blank(a) || blank(b)) return blank(a) - blank(b);
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

/** A number for people: `10,000`. */
export function count(n) {
  return Number(n).toLocaleString("en");
}

/**
 * A long table's sort, filter and pages. `head`: the element holding its
 * `th[data-sort=KEY]` headers, whose buttons sort by `columns[KEY](item)`
 * (again: the other way round; none chosen: `order`, e.g. problems first);
 * `filter`: the id of a search box, every word of which an item's
 * `text(item)` must hold; `pager`: the id of the element that gets the
 * page's range and its previous / next buttons, `pageSize` rows a page.
 * `onChange()` redraws. `arrange(items)` gives the page's items. A
 * header drawn later (columns that come and go) uses `sortHeader`.
 */
export function listControls(opts) {
  const state = { key: null, dir: 1, page: 0 };
  const head = opts.head ? document.getElementById(opts.head) : null;
  const filter = opts.filter ? document.getElementById(opts.filter) : null;
  const pager = opts.pager ? document.getElementById(opts.pager) : null;
  const size = opts.pageSize || 50;
  if (head) {
    for (const th of head.querySelectorAll("th[data-sort]")) {
      const label = th.textContent;
      th.replaceChildren(h("button", { type: "button", class: "sort", title: `sort by ${label.toLowerCase()}` }, label));
    }
    head.addEventListener("click", (e) => {
      const th = e.target.closest("th[data-sort]");
      if (!th) return;
      if (state.key === th.dataset.sort) state.dir = -state.dir;
      else {
        state.key = th.dataset.sort;
        state.dir = 1;
      }
      state.page = 0;
      for (const other of head.querySelectorAll("th[data-sort]")) {
        if (other === th) other.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
        else other.removeAttribute("aria-sort");
      }
      opts.onChange();
    });
  }
  if (filter) filter.addEventListener("input", () => { state.page = 0; opts.onChange(); });
  let last = { matched: 0 };
  if (pager) {
    const step = (by) => () => {
      const pages = Math.max(1, Math.ceil(last.matched / size));
      state.page = Math.min(pages - 1, Math.max(0, state.page + by));
      opts.onChange();
    };
    pager.replaceChildren(
      h("button", { type: "button", "data-page": "previous", onclick: step(-1) }, "‹ previous"),
      h("span", { "data-field": "range", "aria-live": "polite" }),
      h("button", { type: "button", "data-page": "next", onclick: step(1) }, "next ›"));
  }
  return {
    arrange(items) {
      const words = filter ? filter.value.trim().toLowerCase().split(/\s+/).filter(Boolean) : [];
      const list = words.length
        ? items.filter((it) => { const t = opts.text(it).toLowerCase(); return words.every((w) => t.includes(w)); })
        : items.slice();
      const column = state.key && ((opts.columns || {})[state.key] || opts.column?.(state.key));
      if (column) list.sort((a, b) => state.dir * compare(column(a), column(b)) || compare(opts.key(a), opts.key(b)));
      else if (opts.order) list.sort(opts.order);
      const pages = Math.max(1, Math.ceil(list.length / size));
      state.page = Math.min(state.page, pages - 1);
      const from = pager ? state.page * size : 0;
      const rows = pager ? list.slice(from, from + size) : list;
      last = { matched: list.length };
      if (pager) {
        const range = list.length
          ? `${count(from + 1)}–${count(from + rows.length)} of ${count(list.length)}${list.length !== items.length ? ` (of ${count(items.length)})` : ""}`
          : `none of ${count(items.length)}`;
        field(pager, "range", range);
        pager.hidden = items.length <= size && !words.length;
        pager.querySelector('[data-page="previous"]').disabled = state.page === 0;
        pager.querySelector('[data-page="next"]').disabled = state.page >= pages - 1;
      }
      return rows;
    },
  };
}
