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
 * Whether the node answers: `lastOk`, when it last did (ms since the
 * epoch); `down`, whether the last request found nobody (a network error
 * or no answer within 8 s).
 */
export const link = { lastOk: null, down: false };

/** Per path: the last JSON read and its ETag, sent back as If-None-Match. */
const cache = new Map();

/**
 * Calls the API; JSON answers are parsed, others returned as text. A
 * non-2xx answer throws an ApiError carrying the API's `error` message.
 * A read the node says did not change (304) gives the same object as the
 * last time, so a view can tell nothing changed.
 */
export async function api(path, options = {}) {
  const read = !options.method || options.method === "GET";
  const known = read ? cache.get(path) : null;
  const extra = { ...(options.headers || {}) };
  if (known) extra["If-None-Match"] = known.etag;
  let resp;
  try {
    // Our own revalidation, not the browser's cache: a 304 reaches us.
    resp = await fetch(path, { cache: "no-store", signal: AbortSignal.timeout(8000), ...options, headers: headers(extra) });
  } catch (e) {
    link.down = true;
    throw new Error(`the node does not answer: ${e.message}`);
  }
  link.down = false;
  link.lastOk = Date.now();
  if (resp.status === 304 && known) return known.value;
  const body = await resp.text();
  if (!resp.ok) {
    let message = body || resp.statusText;
    try { message = JSON.parse(body).error || message; } catch (_) { /* not JSON */ }
    throw new ApiError(resp.status, message);
  }
  const type = resp.headers.get("content-type") || "";
  const value = type.includes("json") && body ? JSON.parse(body) : body;
  const etag = resp.headers.get("etag");
  if (read) cache.delete(path);
  if (read && etag) {
    cache.set(path, { etag, value });
    // Bounded: the oldest read goes (Map keeps insertion order).
    if (cache.size > 200) cache.delete(cache.keys().next().value);
  }
  return value;
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

/** Clears every message (a new token: what it refused is asked again). */
export function clearReports() {
  messages.clear();
  renderBanner();
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
 * The node first sends its recent events (what happened before the page
 * was opened); a reconnection names the last one seen (`Last-Event-ID`)
 * and gets only those after it. Reconnects after 2 s when the stream ends;
 * `restart()` reconnects at once (after the token changed).
 */
export function followEvents(onEvent, onState) {
  let controller = null;
  let timer = null;
  let lastId = null;
  const seen = (id) => { lastId = id; };
  async function run() {
    controller = new AbortController();
    const mine = controller;
    try {
      const extra = lastId ? { "Last-Event-ID": lastId } : {};
      const resp = await fetch("/v1/events", { headers: headers(extra), signal: mine.signal });
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
          dispatch(buffer.slice(0, end), onEvent, seen);
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

function dispatch(block, onEvent, seen) {
  let kind = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    if (line.startsWith("id:")) seen(line.slice(3).trim());
    else if (line.startsWith("event:")) kind = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  if (!data.length) return;
  let parsed = data.join("\n");
  try { parsed = JSON.parse(parsed); } catch (_) { /* keep the text */ }
  onEvent(kind, parsed);
}
