// Domains: for each GSLB name, the live share of its answers per service
// and site (from the per-domain answer counters of `/v1/stats`, sampled
// every refresh while the view is shown), the method, and datacenter
// mode's records with their ranking. Long lists are filtered and paged.

import { api } from "../api.js";
import { count, duration, field, h, keyed, listControls, num } from "../dom.js";

/** The share is of the answers counted over this last stretch. */
const WINDOW_MS = 10_000;

/** Samples of each domain's answer counters (total and per service), oldest first. */
let samples = [];

let controls = null;
let recordControls = null;
let last = null;

export function setup(context) {
  controls = listControls({
    filter: "domains-filter",
    pager: "domains-pager",
    pageSize: 20,
    key: (d) => d.name,
    text: (d) => `${d.name} ${d.vserver}`,
    order: (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    columns: {},
    onChange: () => last && draw(last),
  });
  recordControls = listControls({
    filter: "records-filter",
    key: (r) => r.name,
    text: (r) => `${r.name} ${r.status} ${r.datacenters.map((dc) => dc.site).join(" ")}`,
    // Records that are not OK first.
    order: (a, b) => (a.status === "OK") - (b.status === "OK") || (a.name < b.name ? -1 : 1),
    onChange: () => last && draw(last),
  });
  void context;
}

/** Takes a sample of the per-domain answer counters. */
export async function sample() {
  const stats = await api("/v1/stats");
  const now = Date.now();
  const domains = {};
  for (const d of stats.domains || []) domains[d.name] = { answers: d.answers || 0, services: d.services || {} };
  samples.push({ at: now, domains });
  // Keep one sample older than the window, the baseline.
  while (samples.length > 2 && samples[1].at <= now - WINDOW_MS) samples.shift();
}

/** A counter's growth between two samples; one that went down (a restart) counts from zero. */
const grew = (after, before) => (after >= before ? after - before : after);

/**
 * What `domain` was answered with between the window's baseline and now:
 * `{ total, services: { name: answers } }`, from the domain's own
 * counters (a backup vserver's answers count only where they answered
 * this domain).
 */
function windowAnswers(domain) {
  if (samples.length < 2) return { total: 0, services: {} };
  const first = samples[0].domains[domain] || { answers: 0, services: {} };
  const now = samples[samples.length - 1].domains[domain] || { answers: 0, services: {} };
  const services = {};
  for (const [service, n] of Object.entries(now.services)) services[service] = grew(n, first.services[service] ?? 0);
  return { total: grew(now.answers, first.answers), services };
}

export async function refresh() {
  const [domains, vservers, records] = await Promise.all([api("/v1/domains"), api("/v1/vservers"), api("/v1/records")]);
  last = { domains, vservers, records };
  draw(last);
  keyed(document.getElementById("domain-names"), domains, (d) => d.name, (d) => h("option", { value: d.name }), () => {});
}

function draw({ domains, vservers, records }) {
  const byName = new Map(vservers.map((v) => [v.name, v]));
  const span = samples.length >= 2 ? (samples[samples.length - 1].at - samples[0].at) / 1000 : 0;
  document.getElementById("share-window").textContent = span ? `${Math.round(span)} s` : "10 s (counting…)";
  const list = document.getElementById("domains-list");
  const shown = controls.arrange(domains);
  if (!domains.length) {
    list.replaceChildren(h("p", { class: "hint" }, "No GSLB domains in this configuration."));
  } else {
    if (list.querySelector("p.hint")) list.replaceChildren();
    keyed(list, shown, (d) => d.name, makeDomain, (el, d) => updateDomain(el, d, byName));
  }
  renderRecords(records.records || []);
}

function makeDomain(d) {
  return h("article", { class: "domain", "data-domain": d.name },
    h("h3", {}, d.name),
    h("p", { class: "hint" },
      "vserver ", h("span", { "data-field": "vserver" }), " · method ", h("span", { "data-field": "method" }),
      " · TTL ", h("span", { "data-field": "ttl" }), " · ", h("span", { "data-field": "answers" })),
    h("div", { class: "shares" }),
    h("p", { class: "hint", "data-field": "sites" }));
}

/** The vserver and its backup vservers, in order (a loop stops the walk). */
function chain(name, byName) {
  const out = [];
  let v = byName.get(name);
  while (v && !out.includes(v)) {
    out.push(v);
    v = v.backup_vserver ? byName.get(v.backup_vserver) : null;
  }
  return out;
}

function updateDomain(el, d, byName) {
  const vservers = chain(d.vserver, byName);
  const main = vservers[0];
  field(el, "vserver", vservers.map((v) => v.name).join(" → backup "));
  field(el, "method", main ? `${main.lb_method}${main.backup_lb_method ? ` (backup ${main.backup_lb_method})` : ""}` : "");
  field(el, "ttl", `${d.ttl}s`);
  const rows = [];
  const seen = new Set();
  for (const v of vservers) {
    for (const b of v.services) {
      if (!seen.has(b.service)) rows.push({ ...b, vserver: v.name });
      seen.add(b.service);
    }
  }
  // The domain's own answers: its count, and each service's among them.
  const { total, services: answers } = windowAnswers(d.name);
  el.dataset.answers = total;
  field(el, "answers", total ? `${count(total)} answers` : "no answers in the window");
  keyed(el.querySelector(".shares"), rows, (r) => r.service, makeShare, (row, r) => updateShare(row, r, answers[r.service] || 0, total));
  const sites = {};
  for (const r of rows) sites[r.site] = (sites[r.site] || 0) + (answers[r.service] || 0);
  field(el, "sites", total ? `By site: ${Object.entries(sites).map(([site, n]) => `${site} ${Math.round((100 * n) / total)}%`).join(" · ")}` : "");
}

function makeShare(r) {
  return h("div", { class: "share", "data-share-service": r.service },
    h("span", { class: "who" }, h("b", {}, r.service), " ", h("span", { "data-field": "site" }), " ", h("span", { "data-field": "state" })),
    h("span", { class: "bar", "aria-hidden": "true" }, h("span", { class: "fill" })),
    h("span", { class: "pct", "data-field": "pct" }));
}

function updateShare(row, r, count, total) {
  field(row, "site", `(${r.site}${r.vserver ? `, ${r.vserver}` : ""}, weight ${r.weight})`);
  const state = field(row, "state", r.state);
  state.className = r.state;
  if (total) {
    const share = count / total;
    row.dataset.share = share.toFixed(4);
    field(row, "pct", `${Math.round(share * 100)}%`);
    row.querySelector(".fill").style.width = `${(share * 100).toFixed(1)}%`;
    row.title = `${count} of ${total} answers`;
  } else {
    delete row.dataset.share;
    field(row, "pct", "–");
    row.querySelector(".fill").style.width = "0";
    row.title = "no answers in the window";
  }
}

function renderRecords(records) {
  const list = document.getElementById("records-list");
  if (!records.length) {
    list.replaceChildren(h("p", { class: "hint" }, "No datacenter-mode records in this configuration."));
    return;
  }
  if (list.querySelector("p.hint")) list.replaceChildren();
  keyed(list, recordControls.arrange(records), (r) => r.name, (r) => h("article", { class: "record", "data-record": r.name },
    h("h4", {}, r.name, " ", h("span", { "data-field": "status" })),
    h("p", { class: "hint", "data-field": "how" }),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Rank"), h("th", {}, "Site"), h("th", {}, "Figure"), h("th", {}, "Reachable"), h("th", {}, "Addresses"))), h("tbody"))),
  (el, r) => {
    const status = field(el, "status", r.status);
    status.className = r.status === "OK" ? "UP" : r.status === "Partially OK" ? "WARN" : "DOWN";
    const age = r.ranked_age_seconds === null ? "ranked per query" : `ranked ${duration(r.ranked_age_seconds)} ago`;
    field(el, "how", `${r.dc_selection}${r.criterion ? ` by ${r.criterion}` : ""} · ${r.balance} · TTL ${r.ttl}s · ${age}${r.fail_safe.length ? ` · fail-safe ${r.fail_safe.join(", ")}` : ""}`);
    keyed(el.querySelector("tbody"), r.datacenters, (dc) => dc.site, (dc) => h("tr", { "data-dc": dc.site },
      h("td", { "data-field": "rank" }), h("td", {}, dc.site), h("td", { "data-field": "figure" }), h("td", { "data-field": "reachable" }), h("td", { "data-field": "addresses" })),
    (row, dc) => {
      field(row, "rank", dc.rank);
      // No criterion, no figure; with one, a missing figure ranks last.
      field(row, "figure", dc.figure !== null ? num(dc.figure, 1) : r.criterion ? "unknown (ranks last)" : "—");
      field(row, "reachable", dc.reachable ? "yes" : "no");
      field(row, "addresses", dc.addresses.map((a) => `${a.ip}${a.healthy ? "" : " (unhealthy)"}`).join(", "));
    });
  });
}
