// VRRP: each virtual router of this node (`/v1/vrrp`): who is master, the
// priorities after tracking, and the recent transitions.

import { api } from "../api.js";
import { field, h, keyed, listControls, num } from "../dom.js";

let controls = null;
let last = null;

export function setup() {
  controls = listControls({
    head: "vrrp-head",
    filter: "vrrp-filter",
    key: (v) => `${v.vrid}/${v.family}`,
    text: (v) => `${v.vrid} ${v.family} ${v.interface} ${v.state} ${v.master ?? ""} ${v.addresses.join(" ")}`,
    columns: {
      vrid: (v) => v.vrid, interface: (v) => v.interface, state: (v) => v.state, master: (v) => v.master,
      priority: (v) => v.effective_priority,
    },
    onChange: () => last && draw(last),
  });
}

export async function refresh() {
  last = await api("/v1/vrrp");
  draw(last);
}

function draw(data) {
  const body = document.getElementById("vrrp-body");
  const all = data.vrids || [];
  const vrids = controls.arrange(all);
  if (!all.length) {
    body.replaceChildren(h("tr", {}, h("td", { colspan: 8 }, "This node runs no virtual router (its configuration has no `add vrid`).")));
  } else {
    if (!body.querySelector("tr[data-vrid]")) body.replaceChildren();
    keyed(body, vrids, (v) => `${v.vrid}/${v.family}`, (v) => h("tr", { "data-vrid": v.vrid, "data-family": v.family },
      h("th", { scope: "row" }, `${v.vrid} (${v.family})`), h("td", { "data-field": "interface" }), h("td", { "data-field": "state" }),
      h("td", { "data-field": "master" }), h("td", { "data-field": "priority" }), h("td", { "data-field": "addresses" }),
      h("td", {}, h("ul", { "data-field": "tracked" })), h("td", {}, h("ol", { "data-field": "transitions", reversed: true }))),
    (row, v) => {
      field(row, "interface", v.interface);
      const state = field(row, "state", v.state);
      state.className = v.state === "MASTER" ? "UP" : v.state === "FAULT" ? "DOWN" : "";
      field(row, "master", v.master ?? "none heard");
      field(row, "priority", `${v.effective_priority} / ${v.base_priority}${v.tracking ? ` (${v.tracking})` : ""}`);
      field(row, "addresses", v.addresses.join(", "));
      keyed(row.querySelector('[data-field="tracked"]'), v.tracked, (t) => t.name, () => h("li"), (li, t) => {
        li.textContent = `${t.name}: ${t.up ? "UP" : "DOWN"}${t.required ? " (required)" : ""}`;
        li.className = t.up ? "UP" : "DOWN";
      });
      const recent = v.transitions.slice(-5).reverse();
      keyed(row.querySelector('[data-field="transitions"]'), recent, (t) => `${t.at_seconds}|${t.to}`, () => h("li"), (li, t) => {
        li.textContent = `+${num(t.at_seconds, 2)}s ${t.from} → ${t.to}: ${t.reason}`;
      });
    });
  }
  const dropped = (data.dropped || []).map((d) => `${d.interface} ${d.reason} ${d.count}`);
  document.getElementById("vrrp-dropped").textContent = dropped.length ? `Adverts dropped: ${dropped.join(", ")}` : "";
}
