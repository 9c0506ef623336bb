// This node's API as the page uses it: the token the user typed (kept in
// sessionStorage, sent as `Authorization: Bearer`), the error banner, and
// the live event stream.

const TOKEN_KEY = "sextant-token";

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(extra) {
  const all = { ...(extra || {}) };
  if (token()) all.Authorization = `Bearer ${token()}`;
  return all;
}

/** An API answer that is not 2xx: the status and the API's own message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(`${status}: ${message}`);
    this.status = status;
  }
}

/**
 * Calls the API; JSON answers are parsed, others returned as text. A
 * non-2xx answer throws an ApiError carrying the API's `error` message.
 */
export async function api(path, options = {}) {
  const resp = await fetch(path, { ...options, headers: headers(options.headers) });
  const body = await resp.text();
  if (!resp.ok) {
    let message = body || resp.statusText;
    try { message = JSON.parse(body).error || message; } catch (_) { /* not JSON */ }
    throw new ApiError(resp.status, message);
  }
  const type = resp.headers.get("content-type") || "";
  return type.includes("json") && body ? JSON.parse(body) : body;
}

/** A write (POST) with a JSON body. */
export function post(path, body) {
  return api(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body || {}),
  });
}

// The banner: one message per source (a view's polling, an action...), so
// that a poll that works again does not hide an action's refusal.
const messages = new Map();

function renderBanner() {
  const el = document.getElementById("error");
  const text = [...messages.values()].join("\n");
  if (el.textContent !== text) el.textContent = text;
  el.hidden = !text;
}

/** Shows `error` (an Error or text) for `source`; null clears it. */
export function report(source, error) {
  if (error) messages.set(source, error.message || String(error));
  else messages.delete(source);
  renderBanner();
}

/**
 * Follows `GET /v1/events` (server-sent events) with the token, which
 * EventSource cannot send, and hands each event to `onEvent(kind, data)`.
 * Reconnects after 2 s when the stream ends; `restart()` reconnects at once
 * (after the token changed).
 */
export function followEvents(onEvent, onState) {
  let controller = null;
  let timer = null;
  async function run() {
    controller = new AbortController();
    const mine = controller;
    try {
      const resp = await fetch("/v1/events", { headers: headers(), signal: mine.signal });
      if (!resp.ok || !resp.body) throw new ApiError(resp.status, "the event stream was refused");
      onState("live");
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          dispatch(buffer.slice(0, end), onEvent);
          buffer = buffer.slice(end + 2);
        }
      }
    } catch (e) {
      if (mine.signal.aborted) return;
    }
    if (mine !== controller) return;
    onState("polling");
    timer = setTimeout(run, 2000);
  }
  run();
  return {
    restart() {
      clearTimeout(timer);
      if (controller) controller.abort();
      run();
    },
  };
}

function dispatch(block, onEvent) {
  let kind = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    if (line.startsWith("event:")) kind = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  if (!data.length) return;
  let parsed = data.join("\n");
  try { parsed = JSON.parse(parsed); } catch (_) { /* keep the text */ }
  onEvent(kind, parsed);
}
