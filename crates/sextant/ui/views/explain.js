// Explain: the same explanation as `sextant explain --server`, rendered by
// the server (`/v1/explain?format=text`), so the page and the command
// never differ.

import { api, report } from "../api.js";

export function setup() {
  const form = document.getElementById("explain");
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const data = new FormData(form);
    const query = new URLSearchParams({ name: data.get("name").trim(), client: data.get("client").trim(), type: data.get("type") || "A", format: "text" });
    const ecs = (data.get("ecs") || "").trim();
    if (ecs) query.set("ecs", ecs);
    const out = document.getElementById("explain-result");
    out.textContent = "asking…";
    try {
      out.textContent = await api(`/v1/explain?${query}`);
      report("explain-form", null);
    } catch (err) {
      out.textContent = `not explained: ${err.message}`;
      report("explain-form", err);
    }
  });
}

// The form is answered on submit only.
export async function refresh() {}
