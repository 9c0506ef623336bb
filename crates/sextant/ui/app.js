// Sextant dashboard: plain ES modules, no build step, nothing fetched but
// this node's own API. The visible view refreshes every 2 s and at once on
// an event of `/v1/events`.

import { api, clearReports, followEvents, link, report, setToken, token } from "./api.js";
import { h } from "./dom.js";
import * as topology from "./views/topology.js";
import * as services from "./views/services.js";
import * as domains from "./views/domains.js";
import * as rtt from "./views/rtt.js";
import * as vrrp from "./views/vrrp.js";
import * as explain from "./views/explain.js";

const VIEWS = { topology, services, domains, rtt, vrrp, explain };
const POLL_MS = 2000;

function current() {
  const name = location.hash.slice(1);
  return VIEWS[name] ? name : "topology";
}

let refreshing = false;

/** The node's own site in the title bar, once it can be read (reads may need the token), and the unsaved-configuration badge. */
function showNode() {
  api("/v1/status").then((st) => {
    document.getElementById("node").textContent = `site ${st.local_site}`;
    document.title = `Sextant · ${st.local_site}`;
    // While configuration commands run that are not saved to the file.
    const unsaved = document.getElementById("config-unsaved");
    unsaved.hidden = !st.config_unsaved;
    unsaved.textContent = st.config_unsaved
      ? `unsaved configuration: ${st.config_unsaved_commands} command(s)`
      : "";
  }, () => {});
}
let again = false;

/** Refreshes the visible view (and what always runs, the answer counters). */
async function refresh() {
  if (refreshing) {
    again = true;
    return;
  }
  refreshing = true;
  const name = current();
  showNode();
  try {
    await Promise.all([
      // The answer counters are sampled while their view is shown.
      name === "domains" ? domains.sample().then(() => report("stats", null), (e) => report("stats", e)) : null,
      VIEWS[name].refresh().then(() => report(name, null), (e) => report(name, e)),
    ]);
  } finally {
    showStale();
    refreshing = false;
    if (again) {
      again = false;
      refresh();
    }
  }
}

/**
 * A node that stops answering: the page says since when it shows nothing
 * new ("stale — last update 12:03:07") and greys what it shows, rather
 * than leaving the last figures green. Checked every second, so a request
 * that hangs counts too.
 */
const STALE_MS = 3 * POLL_MS;
function showStale() {
  const el = document.getElementById("stale");
  const stale = link.down || (link.lastOk !== null && Date.now() - link.lastOk > STALE_MS);
  if (stale) {
    const at = link.lastOk ? new Date(link.lastOk).toLocaleTimeString("en-GB", { hour12: false }) : "never";
    const text = `stale — last update ${at}`;
    if (el.textContent !== text) el.textContent = text;
    document.body.dataset.stale = "true";
  } else if (document.body.dataset.stale) {
    delete document.body.dataset.stale;
    el.textContent = "";
  }
  el.hidden = !stale;
}
setInterval(showStale, 1000);

function selectView() {
  const name = current();
  for (const [view, module] of Object.entries(VIEWS)) {
    const section = document.getElementById(`view-${view}`);
    section.hidden = view !== name;
    if (view !== name) report(view, null);
    module.shown?.(view === name);
  }
  document.querySelectorAll("nav a[data-view]").forEach((a) => {
    if (a.dataset.view === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  refresh();
}

// Events: logged, and the visible view redrawn (once for a burst).
let soon = null;
function onEvent(kind, data) {
  const log = document.getElementById("events");
  // The node stamps each event; those sent again on connecting are older.
  const when = (data && data.time) || new Date().toISOString();
  const text = typeof data === "string" ? data : describe(kind, data);
  log.prepend(h("li", { "data-event": kind }, h("time", {}, when.replace("T", " ").replace("Z", "")), ` ${kind}: ${text}`));
  while (log.children.length > 50) log.lastChild.remove();
  clearTimeout(soon);
  soon = setTimeout(refresh, 100);
}

function describe(kind, d) {
  switch (kind) {
    case "transition": return `${d.service} (${d.site}) ${d.from} → ${d.to}: ${d.reason}`;
    case "maintenance": return `${d.kind} ${d.name} ${d.state}${d.reason ? `: ${d.reason}` : ""}`;
    case "reload": return d.result === "ok" ? `configuration ${d.generation} loaded (${d.services} services)` : `reload failed: ${d.error}`;
    case "mep": return `metric exchange with ${d.site} ${d.state}${d.reason ? `: ${d.reason}` : d.via ? ` via ${d.via}` : ""}`;
    case "vrrp": return `VRID ${d.vrid} on ${d.interface} ${d.from} → ${d.to}: ${d.reason}`;
    case "lagged": return `missed ${d.missed} events`;
    default: return JSON.stringify(d);
  }
}

function setupToken(events) {
  const state = document.getElementById("token-state");
  const show = () => { state.textContent = token() ? "token set" : "no token"; };
  document.getElementById("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const input = document.getElementById("token");
    setToken(input.value);
    input.value = "";
    show();
    // What the old token was refused is asked again with the new one.
    clearReports();
    events.restart();
    refresh();
  });
  show();
}

const events = followEvents(onEvent, (state) => {
  document.getElementById("live-state").textContent = state === "live" ? "live" : "polling every 2 s";
});
setupToken(events);

for (const module of Object.values(VIEWS)) module.setup?.({ refresh });
window.addEventListener("hashchange", selectView);
selectView();
setInterval(refresh, POLL_MS);
