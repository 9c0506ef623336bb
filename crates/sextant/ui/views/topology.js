// Topology: the sites as a graph with their metric exchange links. A link
// this node is an end of shows this node's own view; a link between two
// other sites shows what those sites last reported over metric exchange
// (`reported_links` of `/v1/sites`); a configured link nobody reported is
// grey ("not reported").

import { api } from "../api.js";
import { duration, field, h, keyed, listControls, num, s, secondsSince } from "../dom.js";

const W = 640;
const H = 440;

/** `/v1/sites`'s link words to the graph's kinds. */
const KIND = { peer: "peer", "to-child": "parent", "to-parent": "parent", adopted: "backup" };

let linkControls = null;
let siteControls = null;
let last = null;

export function setup() {
  const redraw = () => last && (renderLinks(last.links), renderSites(last.sites));
  linkControls = listControls({
    head: "links-head",
    filter: "links-filter",
    key: (l) => l.key,
    text: (l) => `${l.a} ${l.b} ${l.kind} ${l.state === "unknown" ? "not reported" : l.state} ${l.seenBy.join(" ")}`,
    // Down links first.
    order: (p, q) => (p.state === "down") * -1 - (q.state === "down") * -1 || (p.key < q.key ? -1 : 1),
    columns: { link: (l) => l.key, kind: (l) => l.kind, state: (l) => l.state, seen: (l) => l.seenBy.join(", ") },
    onChange: redraw,
  });
  siteControls = listControls({
    head: "sites-head",
    filter: "sites-filter",
    key: (x) => x.name,
    text: (x) => `${x.name} ${x.type} ${x.ip} ${x.mep} ${x.parent || ""} ${x.last_down_reason || ""}`,
    // Sites whose metric exchange is down first.
    order: (a, b) => (a.mep === "DOWN") * -1 - (b.mep === "DOWN") * -1 || (a.name < b.name ? -1 : 1),
    columns: {
      site: (x) => x.name, type: (x) => x.type, ip: (x) => x.ip, mep: (x) => x.mep, parent: (x) => x.current_parent || x.parent,
      last: (x) => (x.last_message ? -Date.parse(x.last_message) : null), rtt: (x) => x.link_rtt_ms, lost: (x) => x.keepalives_lost,
      down: (x) => x.last_down_reason,
    },
    onChange: redraw,
  });
}

export async function refresh() {
  const sites = await api("/v1/sites");
  const local = sites.find((x) => x.role === "local");
  const links = buildLinks(sites, local);
  last = { sites, links };
  draw(sites, links, local);
  renderLinks(links);
  renderSites(sites);
}

function pair(a, b) {
  return a < b ? `${a}|${b}` : `${b}|${a}`;
}

/** Every link with its kind, state (up, down, unknown) and who says so. */
export function buildLinks(sites, local) {
  const links = new Map();
  const names = new Set(sites.map((x) => x.name));
  const add = (a, b, kind, state, seenBy, authoritative) => {
    if (a === b || !names.has(a) || !names.has(b)) return;
    const key = pair(a, b);
    const link = links.get(key) || { key, a: key.split("|")[0], b: key.split("|")[1], kind, state: "unknown", seenBy: [], authoritative: false };
    if (authoritative) {
      link.state = state;
      link.kind = kind;
      link.authoritative = true;
    } else if (!link.authoritative && state !== "unknown") {
      // Two ends that disagree: a link is only as good as its worse end.
      link.state = link.state === "down" || state === "down" ? "down" : "up";
      if (link.kind !== "backup") link.kind = kind;
    }
    if (seenBy && !link.seenBy.includes(seenBy)) link.seenBy.push(seenBy);
    links.set(key, link);
  };
  // This node's own links: what it sees now.
  for (const x of sites) {
    if (local && x.link && KIND[x.link]) add(local.name, x.name, KIND[x.link], x.mep === "UP" ? "up" : "down", local.name, true);
  }
  // What the other sites reported (only from sites this node hears now).
  for (const x of sites) {
    if (x.role === "local" || x.mep !== "UP" || !x.reported_links) continue;
    for (const l of x.reported_links) add(x.name, l.site, KIND[l.kind] || "peer", l.up ? "up" : "down", x.name, false);
  }
  // The configured shape: a child with its parent (and the parent it has
  // now); parents, or flat sites, with each other.
  for (const x of sites) {
    if (x.type === "child") {
      const relayed = x.mep === "UP" && x.via ? "up" : "unknown";
      if (x.parent) add(x.name, x.parent, "parent", x.via === x.parent ? relayed : "unknown", null, false);
      if (x.current_parent && x.current_parent !== x.parent) add(x.name, x.current_parent, "backup", x.via === x.current_parent ? relayed : "unknown", null, false);
    }
  }
  // The configured mesh of parents (or flat sites), where metric exchange
  // runs at all: with it off (no site has a link state) there are no
  // links to draw, only sites.
  const exchanging = sites.some((x) => x.role !== "local" && (x.mep !== "n/a" || x.link || x.via));
  const meshed = exchanging ? sites.filter((x) => x.type !== "child") : [];
  for (const a of meshed) for (const b of meshed) if (a.name < b.name) add(a.name, b.name, "peer", "unknown", null, false);
  return [...links.values()].sort((p, q) => (p.key < q.key ? -1 : 1));
}

/** Parents (or flat sites) on a circle; each child outside its parent now. */
function layout(sites) {
  const pos = new Map();
  const top = sites.filter((x) => x.type !== "child").sort((a, b) => (a.name < b.name ? -1 : 1));
  const children = sites.filter((x) => x.type === "child");
  const radius = children.length ? 90 : 140;
  top.forEach((x, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(1, top.length);
    pos.set(x.name, { x: W / 2 + radius * Math.cos(angle), y: H / 2 + radius * Math.sin(angle), angle });
  });
  const byParent = new Map();
  for (const c of children) {
    const p = c.current_parent || c.parent;
    if (!byParent.has(p)) byParent.set(p, []);
    byParent.get(p).push(c);
  }
  for (const [parent, list] of byParent) {
    const base = pos.get(parent)?.angle ?? Math.PI / 2;
    list.sort((a, b) => (a.name < b.name ? -1 : 1)).forEach((c, i) => {
      const angle = base + (i - (list.length - 1) / 2) * 0.5;
      pos.set(c.name, { x: W / 2 + 185 * Math.cos(angle), y: H / 2 + 185 * Math.sin(angle), angle });
    });
  }
  return pos;
}

function draw(sites, links, local) {
  const svg = document.getElementById("topology");
  const pos = layout(sites);
  const edges = links.map((l) => {
    const a = pos.get(l.a);
    const b = pos.get(l.b);
    const said = l.seenBy.length ? `seen by ${l.seenBy.join(", ")}` : "not reported by either end";
    return s("line", { x1: a.x.toFixed(1), y1: a.y.toFixed(1), x2: b.x.toFixed(1), y2: b.y.toFixed(1), class: `edge ${l.state} ${l.kind}`, "data-link": l.key, "data-state": l.state, "data-kind": l.kind },
      s("title", {}, `${l.a} — ${l.b}: ${l.kind} link, ${l.state} (${said})`));
  });
  const nodes = sites.map((x) => {
    const p = pos.get(x.name);
    const state = x.role === "local" ? "local" : x.mep === "UP" ? "up" : x.mep === "DOWN" ? "down" : "unknown";
    return s("g", { "data-site": x.name, class: `site ${state}`, transform: `translate(${p.x.toFixed(1)} ${p.y.toFixed(1)})`, tabindex: 0, role: "img", "aria-label": `${x.name}: ${x.type} site, ${x.role === "local" ? "this node" : `metric exchange ${x.mep}`}` },
      s("title", {}, siteTitle(x)),
      s("circle", { r: 26 }),
      s("text", { "text-anchor": "middle", dy: "-0.1em", class: "name" }, x.name),
      s("text", { "text-anchor": "middle", dy: "1.1em", class: "type" }, x.role === "local" ? "this node" : x.type));
  });
  svg.replaceChildren(s("g", { class: "edges" }, edges), s("g", { class: "nodes" }, nodes));
  svg.setAttribute("aria-label", `${sites.length} sites; ${links.filter((l) => l.state === "down").length} links down${local ? `, seen from ${local.name}` : ""}`);
}

function siteTitle(x) {
  const lines = [`${x.name} (${x.type}, ${x.ip})`, `metric exchange: ${x.mep}`];
  if (x.current_parent) lines.push(`parent now: ${x.current_parent}`);
  if (x.via) lines.push(`reached via ${x.via}`);
  if (x.last_down_reason) lines.push(`last down: ${x.last_down_reason}`);
  return lines.join("\n");
}

function renderLinks(links) {
  const body = document.getElementById("links-body");
  if (!links.length) {
    body.replaceChildren(h("tr", { "data-no-links": "" }, h("td", { colspan: 4 }, "No metric exchange links: metric exchange is off (no site exchanges metrics with this node).")));
    return;
  }
  body.querySelector("tr[data-no-links]")?.remove();
  keyed(body, linkControls.arrange(links), (l) => l.key, (l) => h("tr", { "data-link-row": l.key },
    h("th", { scope: "row" }, `${l.a} — ${l.b}`), h("td", { "data-field": "kind" }), h("td", { "data-field": "state" }), h("td", { "data-field": "seen" })),
  (row, l) => {
    field(row, "kind", l.kind);
    const state = field(row, "state", l.state === "unknown" ? "not reported" : l.state.toUpperCase());
    state.className = l.state.toUpperCase();
    field(row, "seen", l.seenBy.join(", ") || "—");
  });
}

function renderSites(sites) {
  keyed(document.getElementById("sites-body"), siteControls.arrange(sites), (x) => x.name, (x) => h("tr", { "data-site-row": x.name },
    h("th", { scope: "row" }, x.name), h("td", { "data-field": "type" }), h("td", { "data-field": "ip" }), h("td", { "data-field": "mep" }),
    h("td", { "data-field": "parent" }), h("td", { "data-field": "last" }), h("td", { "data-field": "rtt" }), h("td", { "data-field": "lost" }),
    h("td", { "data-field": "figures" }), h("td", { "data-field": "down" })),
  (row, x) => {
    field(row, "type", x.role === "local" ? `${x.type} (this node)` : x.type);
    field(row, "ip", x.public_ip ? `${x.ip} (public ${x.public_ip})` : x.ip);
    const mep = field(row, "mep", x.role === "local" ? "—" : `${x.mep}${x.link ? ` (${x.link}${x.link_secure ? ", TLS" : ""})` : x.via ? ` via ${x.via}` : ""}`);
    mep.className = x.mep;
    field(row, "parent", x.current_parent ? `${x.current_parent}${x.adopted_for ? ` (for ${x.adopted_for})` : ""}` : x.parent || "");
    field(row, "last", x.last_message ? `${duration(secondsSince(x.last_message))} ago` : "");
    field(row, "rtt", x.link_rtt_ms === null || x.link_rtt_ms === undefined ? "" : `${num(x.link_rtt_ms, 2)} ms`);
    field(row, "lost", x.keepalives_sent ? `${x.keepalives_lost} of ${x.keepalives_sent}` : "");
    const cpu = x.cpu_percent === null || x.cpu_percent === undefined ? "" : `${num(x.cpu_percent, 0)}%`;
    const mem = x.memory_percent === null || x.memory_percent === undefined ? "" : `${num(x.memory_percent, 0)}%`;
    field(row, "figures", cpu || mem ? `${cpu || "?"} / ${mem || "?"}` : "");
    field(row, "down", x.last_down_reason || "");
  });
}
