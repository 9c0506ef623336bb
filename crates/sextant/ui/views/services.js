// Services: a summary first (counts by state, the problems), then one
// page of the table, sorted (problems first unless a header says
// otherwise) and filtered: state, reason, time in state, load, a health
// timeline from `/v1/services/NAME/history` (fetched for the rows shown
// only), and the operator's enable / disable / drain (disable and drain
// asked to be confirmed).

import { api, post, report } from "../api.js";
import { count, duration, field, h, keyed, listControls, num, s, secondsSince } from "../dom.js";

/** Rows a page: the table's DOM stays this small at 10,000 services. */
const PAGE_SIZE = 50;

/** The timeline's span. */
const WINDOW_S = 15 * 60;
const WIDTH = 180;
const HEIGHT = 14;

let ctx = null;
/** Per service: the history fetched and the `last_change` it was fetched for. */
const histories = new Map();
let latest = [];
let controls = null;

/** Problems first: DOWN, then out of service by the operator, then unchecked; then by name. */
function rank(svc) {
  if (svc.state !== "UP") return 0;
  if (svc.admin_state && svc.admin_state !== "enabled") return 1;
  if (svc.checked === false && svc.health_source === "none") return 2;
  return 3;
}

export function setup(context) {
  ctx = context;
  controls = listControls({
    head: "services-head",
    filter: "services-filter",
    pager: "services-pager",
    pageSize: PAGE_SIZE,
    key: (svc) => svc.name,
    text: (svc) => `${svc.name} ${svc.site} ${svc.state} ${svc.admin_state} ${svc.ip} ${svc.reason}`,
    order: (a, b) => rank(a) - rank(b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    columns: {
      name: (svc) => svc.name,
      site: (svc) => svc.site,
      state: (svc) => svc.state,
      admin: (svc) => svc.admin_state,
      reason: (svc) => svc.reason,
      since: (svc) => (svc.last_change ? -Date.parse(svc.last_change) : null),
    },
    onChange: () => redraw(),
  });
}

/** Redraws from what was read last, fetching the timelines the page now shows. */
async function redraw() {
  const rows = controls.arrange(latest);
  await fetchHistories(rows, latest).catch((e) => report("services", e));
  render(rows);
}

/** When this node started (ms since the epoch): timelines begin there at the earliest. */
let startedAt = null;

export async function refresh() {
  const [list, status] = await Promise.all([api("/v1/services"), api("/v1/status")]);
  latest = list;
  startedAt = Date.now() - status.uptime_seconds * 1000;
  summarise(list);
  const rows = controls.arrange(list);
  await fetchHistories(rows, list);
  render(rows);
}

/** "20 of 1,000 DOWN", then the count of each state, before any row. */
function summarise(list) {
  const by = { UP: 0, DOWN: 0, disabled: 0, draining: 0, unchecked: 0 };
  for (const svc of list) {
    by[svc.state === "UP" ? "UP" : "DOWN"] += 1;
    if (svc.admin_state === "disabled") by.disabled += 1;
    if (svc.admin_state === "draining") by.draining += 1;
    if (svc.checked === false && svc.health_source === "none") by.unchecked += 1;
  }
  const el = document.getElementById("services-summary");
  const headline = !list.length ? "no services"
    : by.DOWN ? `${count(by.DOWN)} of ${count(list.length)} DOWN` : `all ${count(list.length)} UP`;
  const parts = [
    h("strong", { class: by.DOWN ? "DOWN" : list.length ? "UP" : "", "data-field": "headline" }, headline),
    ` · ${count(by.UP)} UP · ${count(by.DOWN)} DOWN`,
    by.disabled ? ` · ${count(by.disabled)} disabled` : "",
    by.draining ? ` · ${count(by.draining)} draining` : "",
    by.unchecked ? ` · ${count(by.unchecked)} not checked` : "",
  ];
  el.replaceChildren(...parts);
  for (const [state, n] of Object.entries(by)) el.dataset[`count${state[0].toUpperCase()}${state.slice(1)}`] = n;
  el.dataset.total = list.length;
}

/**
 * Fetches the history of each shown service whose state changed since it
 * was fetched: at most one page of requests, however many services changed.
 */
async function fetchHistories(rows, list) {
  const stale = rows.filter((svc) => {
    const known = histories.get(svc.name);
    if (known && known.lastChange === svc.last_change) return false;
    // Never changed since the node started: an empty history, not worth a request.
    if (!svc.last_change) {
      histories.set(svc.name, { lastChange: null, events: [] });
      return false;
    }
    return true;
  });
  await Promise.all(stale.map(async (svc) => {
    try {
      const events = await api(`/v1/services/${encodeURIComponent(svc.name)}/history`);
      histories.set(svc.name, { lastChange: svc.last_change, events });
    } catch (e) {
      // A service removed by a reload in between: no timeline this round.
      if (e.status !== 404) throw e;
    }
  }));
  if (histories.size > list.length) {
    const names = new Set(list.map((svc) => svc.name));
    for (const name of histories.keys()) if (!names.has(name)) histories.delete(name);
  }
}

function render(rows) {
  keyed(document.getElementById("services-body"), rows, (svc) => svc.name, makeRow, updateRow);
}

function makeRow(svc) {
  const reason = h("input", { id: `reason-${svc.name}`, "data-reason-for": svc.name, placeholder: "reason", "aria-label": `reason for ${svc.name}` });
  const confirm = h("span", { class: "confirm", "data-confirm-for": svc.name, hidden: "" });
  const buttons = ["disable", "drain", "enable"].map((action) =>
    h("button", { type: "button", "data-action": action, "data-service": svc.name, onclick: () => ask(svc.name, action, reason, confirm) }, action));
  return h("tr", { "data-service": svc.name },
    h("th", { scope: "row", "data-field": "name" }, svc.name),
    h("td", { "data-field": "site", "data-label": "Site" }),
    h("td", { "data-field": "state", "data-label": "State" }),
    h("td", { "data-field": "admin", "data-label": "Operator" }),
    h("td", { "data-label": "Reason" }, h("div", {}, h("span", { "data-field": "unchecked", class: "unchecked", hidden: "" }), h("span", { "data-field": "reason" }), h("ul", { class: "monitors" }))),
    h("td", { "data-field": "since", "data-label": "In state for" }),
    h("td", { "data-field": "load", "data-label": "Load" }),
    h("td", { "data-label": "Timeline" }, s("svg", { "data-timeline": svc.name, width: WIDTH, height: HEIGHT, viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img" })),
    h("td", { "data-label": "Actions" }, h("div", { class: "actions" }, reason, buttons, confirm)));
}

function updateRow(row, svc) {
  field(row, "site", svc.site);
  const state = field(row, "state", svc.state);
  state.className = svc.state;
  const admin = field(row, "admin", (svc.admin_state || "enabled").toUpperCase());
  admin.className = svc.admin_state === "enabled" ? "" : "admin-out";
  admin.title = svc.admin_state === "enabled" ? "" : `since ${svc.admin_since}${svc.admin_reason ? `: ${svc.admin_reason}` : ""}`;
  field(row, "reason", svc.admin_reason ? `${svc.reason} · operator: ${svc.admin_reason}` : svc.reason);
  unchecked(row, svc);
  keyed(row.querySelector("ul.monitors"), svc.monitors, (m) => m.name, () => h("li"), (li, m) => {
    const ms = m.last_response_ms === null ? "" : ` ${num(m.last_response_ms, 1)} ms`;
    const text = `${m.name} (${m.type}) ${m.state}${ms}`;
    if (li.textContent !== text) li.textContent = text;
    li.title = m.last_detail || "";
  });
  const since = field(row, "since", svc.last_change ? duration(secondsSince(svc.last_change)) : "since start");
  since.title = svc.last_change || "no change since this node started";
  field(row, "load", load(svc.load));
  drawTimeline(row.querySelector("svg[data-timeline]"), svc);
}

/**
 * A service nothing checks (no monitor, no metric exchange) is marked: it
 * is UP whatever happens to it. `-healthMonitor NO` says so on purpose.
 */
function unchecked(row, svc) {
  const source = svc.health_source || "monitors";
  const byChoice = source === "none_by_choice";
  const mark = field(row, "unchecked", source === "none" ? "NOT CHECKED" : byChoice ? "not checked (by choice)" : "");
  if (!mark) return;
  mark.hidden = svc.checked !== false;
  mark.className = byChoice ? "unchecked by-choice" : "unchecked";
  mark.title = byChoice
    ? "-healthMonitor NO: nothing is to check this service; it is UP unless disabled"
    : "nothing checks this service (no monitor bound, no metric exchange): it is UP whatever happens to it; bind a monitor";
}

/** The figures the load-based methods use, those that are measured. */
function load(l) {
  if (!l) return "";
  const parts = [];
  if (l.connections !== null && l.connections !== undefined) parts.push(`${l.connections} conn`);
  if (l.response_time_ms !== null && l.response_time_ms !== undefined) parts.push(`${num(l.response_time_ms, 1)} ms`);
  if (l.bandwidth_bps !== null && l.bandwidth_bps !== undefined) parts.push(`${num(l.bandwidth_bps / 1e6, 2)} Mb/s`);
  if (l.packets_ps !== null && l.packets_ps !== undefined) parts.push(`${l.packets_ps} pkt/s`);
  if (l.custom_load !== null && l.custom_load !== undefined) parts.push(`load ${l.custom_load}`);
  if (l.cpu_percent !== null && l.cpu_percent !== undefined) parts.push(`cpu ${l.cpu_percent}%`);
  if (l.memory_percent !== null && l.memory_percent !== undefined) parts.push(`mem ${l.memory_percent}%`);
  return parts.length ? parts.join(" · ") : "—";
}

/**
 * The last WINDOW_S seconds as coloured stretches: before the first
 * transition in the history the service had that transition's `from`.
 */
function drawTimeline(svg, svc) {
  const events = histories.get(svc.name)?.events || [];
  const now = Date.now();
  // Nothing before this node started: a young node's timeline is its life so far.
  const start = Math.max(now - WINDOW_S * 1000, startedAt ?? 0);
  const span = Math.max(1, now - start);
  const stretches = [];
  let state = events.length ? events[0].from : svc.state;
  let from = start;
  for (const e of events) {
    const at = Date.parse(e.time);
    if (at > start) {
      stretches.push([from, at, state]);
      from = at;
    }
    state = e.to;
  }
  stretches.push([from, now, state]);
  const x = (t) => ((Math.max(t, start) - start) / span) * WIDTH;
  // The state now is always visible, however recent its change.
  const NOW_MIN = 4;
  const rects = stretches.map(([a, b, st], i) => {
    const last = i === stretches.length - 1;
    const x0 = last ? Math.min(x(a), WIDTH - NOW_MIN) : x(a);
    return s("rect", { x: x0.toFixed(1), y: 0, width: Math.max(1, x(b) - x0).toFixed(1), height: HEIGHT, class: `tl-${st}` });
  });
  const recent = events.slice(-5).reverse().map((e) => `${e.time} ${e.from} → ${e.to}: ${e.reason}`);
  const since = new Date(start).toISOString().replace("T", " ").slice(0, 19);
  const title = s("title", {}, `since ${since}\n${recent.length ? recent.join("\n") : `${svc.state} all along`}`);
  svg.replaceChildren(title, ...rects);
  svg.setAttribute("aria-label", `${svc.name}: ${events.length} transitions`);
}

/**
 * Disable and drain take a service out of answers: the row asks first
 * ("Disable web-1?" Yes / No, Yes focused); enable is done at once.
 */
function ask(name, action, reasonInput, box) {
  if (action === "enable") {
    act(name, action, reasonInput);
    return;
  }
  const done = () => { box.hidden = true; box.replaceChildren(); };
  const yes = h("button", { type: "button", "data-confirm": "yes", onclick: () => { done(); act(name, action, reasonInput); } }, `yes, ${action}`);
  box.replaceChildren(
    h("span", { "data-field": "question" }, `${action[0].toUpperCase()}${action.slice(1)} ${name}${action === "drain" ? " (no new clients)" : " (no more answers)"}?`),
    " ", yes, " ",
    h("button", { type: "button", "data-confirm": "no", onclick: done }, "no"));
  box.hidden = false;
  yes.focus();
}

async function act(name, action, reasonInput) {
  const reason = reasonInput.value.trim();
  try {
    await post(`/v1/services/${encodeURIComponent(name)}/${action}`, reason ? { reason } : {});
    report("action", null);
    reasonInput.value = "";
  } catch (e) {
    report("action", new Error(`${action} ${name}: ${e.message}`));
  }
  ctx.refresh();
}
