// RTT: the RTT method's LDNS table (`/v1/ldns`), one column per site.

import { api } from "../api.js";
import { duration, field, h, keyed, listControls, num, sortHeader } from "../dom.js";

let controls = null;
let last = null;

export function setup() {
  controls = listControls({
    head: "rtt-head",
    filter: "rtt-filter",
    pager: "rtt-pager",
    pageSize: 50,
    key: (e) => `${e.ldns}/${e.prefix_len}`,
    text: (e) => `${e.ldns}/${e.prefix_len}`,
    columns: { ldns: (e) => e.ldns, last: (e) => e.last_query_age_seconds },
    // `site:NAME`: by that site's RTT.
    column: (key) => key.startsWith("site:") ? (e) => e.sites.find((x) => x.site === key.slice(5))?.rtt_ms ?? null : null,
    onChange: () => last && draw(last),
  });
}

export async function refresh() {
  last = await api("/v1/ldns");
  draw(last);
}

function draw(table) {
  const all = table.entries || [];
  const entries = controls.arrange(all);
  const sites = [];
  for (const e of entries) for (const s of e.sites) if (!sites.includes(s.site)) sites.push(s.site);
  const head = document.getElementById("rtt-head");
  const wanted = ["LDNS", "Last query", ...sites].join("|");
  if (head.dataset.columns !== wanted) {
    head.dataset.columns = wanted;
    head.replaceChildren(h("tr", {}, sortHeader("ldns", "LDNS"), sortHeader("last", "Last query"), sites.map((s) => sortHeader(`site:${s}`, `${s} RTT (age)`))));
  }
  const body = document.getElementById("rtt-body");
  if (!all.length) {
    body.replaceChildren(h("tr", {}, h("td", { colspan: 2 }, "No LDNS measured yet: the table fills as resolvers query this site for names answered by the RTT method.")));
  } else {
    if (!body.querySelector("tr[data-ldns]")) body.replaceChildren();
    keyed(body, entries, (e) => `${e.ldns}/${e.prefix_len}|${sites.join(",")}`, (e) => h("tr", { "data-ldns": `${e.ldns}/${e.prefix_len}` },
      h("th", { scope: "row" }, `${e.ldns}/${e.prefix_len}`), h("td", { "data-field": "last-query" }), sites.map((s) => h("td", { "data-site": s }))),
    (row, e) => {
      field(row, "last-query", e.last_query_age_seconds === null ? "none recently" : `${duration(e.last_query_age_seconds)} ago`);
      for (const s of sites) {
        const cell = row.querySelector(`td[data-site="${CSS.escape(s)}"]`);
        const m = e.sites.find((x) => x.site === s);
        const text = !m || m.rtt_ms === null ? "—" : `${num(m.rtt_ms, 1)} ms (${duration(m.age_seconds)}${m.probe ? `, ${m.probe}` : ""})`;
        if (cell.textContent !== text) cell.textContent = text;
        cell.title = m && m.hops !== undefined ? `${m.hops} hops, loss ${m.packet_loss_percent}%, MOS ${m.mos}` : "";
      }
    });
  }
  document.getElementById("rtt-counters").textContent =
    `Entries made ${table.created}, evicted ${table.evicted}, expired ${table.expired}, refused by the rate limit ${table.rate_limited}. ` +
    `Probes sent ${table.probes_sent}, probe cycles failed ${table.probe_failures}. RTT messages sent to the other sites ${table.rtt_messages_sent}.`;
}
