// Sextant dashboard: plain ES module, no build step, nothing fetched but this
// node's own API. Reads poll every 2 s; /v1/events adds live transitions.
const TOKEN_KEY = "sextant-token";

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

function showError(text) {
  const el = document.getElementById("error");
  el.textContent = text || "";
  el.hidden = !text;
}

/** Calls the API with the typed token; a non-2xx answer throws the API's own message. */
export async function api(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  if (token()) headers["Authorization"] = "Bearer " + token();
  const resp = await fetch(path, { ...options, headers });
  const body = await resp.text();
  if (!resp.ok) {
    let message = body;
    try { message = JSON.parse(body).error || body; } catch (_) { /* not JSON */ }
    throw new Error(`${resp.status}: ${message}`);
  }
  return body ? JSON.parse(body) : null;
}

function cell(row, field, text, cls) {
  const td = document.createElement("td");
  td.dataset.field = field;
  td.textContent = text ?? "";
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

function since(rfc3339) {
  if (!rfc3339) return "";
  const secs = Math.max(0, Math.round((Date.now() - Date.parse(rfc3339)) / 1000));
  if (secs < 120) return `${secs}s`;
  if (secs < 7200) return `${Math.round(secs / 60)}m`;
  return `${Math.round(secs / 3600)}h`;
}

async function act(name, action) {
  const input = document.querySelector(`input[data-reason-for="${CSS.escape(name)}"]`);
  const reason = input ? input.value : "";
  try {
    await api(`/v1/services/${encodeURIComponent(name)}/${action}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(reason ? { reason } : {}),
    });
    showError("");
    refresh();
  } catch (e) {
    showError(e.message);
  }
}

function renderServices(list) {
  const body = document.getElementById("services-body");
  // Keep a reason the user is typing across refreshes.
  const typed = {};
  body.querySelectorAll("input[data-reason-for]").forEach((i) => { typed[i.dataset.reasonFor] = i.value; });
  const focused = document.activeElement;
  const focusKey = focused && focused.dataset ? (focused.dataset.reasonFor || null) : null;
  body.replaceChildren();
  for (const s of list) {
    const row = document.createElement("tr");
    row.dataset.service = s.name;
    cell(row, "name", s.name);
    cell(row, "site", s.site);
    const state = String(s.state).toUpperCase();
    cell(row, "state", state, state);
    cell(row, "admin", String(s.admin_state || "enabled").toUpperCase());
    cell(row, "reason", s.admin_reason ? `${s.reason} (operator: ${s.admin_reason})` : s.reason);
    const sinceCell = cell(row, "since", since(s.last_change));
    if (s.last_change) sinceCell.title = s.last_change;
    const actions = document.createElement("td");
    actions.className = "actions";
    const label = document.createElement("label");
    label.textContent = "Reason";
    const reason = document.createElement("input");
    reason.id = `reason-${s.name}`;
    label.htmlFor = reason.id;
    reason.dataset.reasonFor = s.name;
    reason.value = typed[s.name] || "";
    actions.append(label, reason);
    for (const action of ["disable", "enable", "drain"]) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = action;
      b.dataset.action = action;
      b.dataset.service = s.name;
      b.addEventListener("click", () => act(s.name, action));
      actions.appendChild(b);
    }
    row.appendChild(actions);
    body.appendChild(row);
    if (focusKey === s.name) reason.focus();
  }
}

async function refresh() {
  try {
    const data = await api("/v1/services");
    renderServices(Array.isArray(data) ? data : data.services || []);
    showError("");
  } catch (e) {
    showError(e.message);
  }
}

function listenEvents() {
  if (!window.EventSource) return;
  // EventSource cannot send headers: with token-protected reads the 2 s poll carries the page.
  const source = new EventSource("/v1/events");
  source.onmessage = (m) => addEvent(m.data);
  for (const kind of ["transition", "reload", "maintenance"]) {
    source.addEventListener(kind, (m) => { addEvent(`${kind}: ${m.data}`); refresh(); });
  }
}

function addEvent(text) {
  const list = document.getElementById("events");
  const li = document.createElement("li");
  li.textContent = `${new Date().toISOString()} ${text}`;
  list.prepend(li);
  while (list.children.length > 50) list.lastChild.remove();
}

function selectView() {
  const name = (location.hash || "#services").slice(1);
  document.querySelectorAll("main > section").forEach((s) => { s.hidden = s.id !== `view-${name}`; });
  document.querySelectorAll("nav a[data-view]").forEach((a) => {
    if (a.dataset.view === name) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  });
}

function setupToken() {
  const state = document.getElementById("token-state");
  const show = () => { state.textContent = token() ? "token set" : "no token"; };
  document.getElementById("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const input = document.getElementById("token");
    if (input.value) sessionStorage.setItem(TOKEN_KEY, input.value); else sessionStorage.removeItem(TOKEN_KEY);
    input.value = "";
    show();
    refresh();
  });
  show();
}

setupToken();
window.addEventListener("hashchange", selectView);
selectView();
refresh();
listenEvents();
setInterval(refresh, 2000);
