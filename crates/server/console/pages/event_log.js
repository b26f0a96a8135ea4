// A session's event log: one row per event, the streamed pieces of one
// message (consecutive `message.delta`) grouped into one collapsed row
// with their text, expandable to each piece. Long data wraps inside its
// cell and scrolls there: the log never widens the page.

import { h, formatTime } from "../ui.js";

/** Runs of events: consecutive deltas of one message form one run. */
function runs(events) {
  const out = [];
  for (const e of events) {
    const last = out.at(-1);
    if (e.type === "message.delta" && last?.[0].type === "message.delta" && last[0].messageId === e.messageId) last.push(e);
    else out.push([e]);
  }
  return out;
}

/** One event's row; `hidden` for the pieces under a group. */
function eventRow(e, attrs = {}) {
  const { type, seq, timestamp, sessionId, ...data } = e;
  void sessionId;
  return h("tr", attrs, h("td", {}, String(seq)), h("td", {}, h("code", {}, type)),
    h("td", { class: "small" }, formatTime(timestamp)),
    h("td", {}, h("code", { class: "event-data" }, JSON.stringify(data))));
}

/** A run of deltas: one row with the text they stream, and their rows. */
function deltaGroup(run) {
  const first = run[0];
  const last = run.at(-1);
  const pieces = run.map((e) => eventRow(e, { class: "delta-piece", hidden: true }));
  const toggle = h("button", { type: "button", class: "link", "aria-expanded": "false" }, `${run.length} pieces`);
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    pieces.forEach((p) => { p.hidden = !open; });
  });
  const text = run.map((e) => e.delta ?? "").join("");
  const head = h("tr", { class: "delta-group" },
    h("td", {}, `${first.seq}–${last.seq}`), h("td", {}, h("code", {}, "message.delta"), " ", toggle),
    h("td", { class: "small" }, formatTime(first.timestamp)),
    h("td", {}, h("span", { class: "event-data" }, `${first.role || "assistant"}: ${text}`)));
  return [head, ...pieces];
}

/** The log's table. */
export function eventLog(events) {
  return h("table", { class: "events", "aria-label": "Event log" },
    h("colgroup", {}, h("col", { class: "seq" }), h("col", { class: "type" }), h("col", { class: "time" }), h("col")),
    h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "Type"), h("th", {}, "Time"), h("th", {}, "Data"))),
    h("tbody", {}, runs(events).flatMap((run) => (run.length > 1 ? deltaGroup(run) : [eventRow(run[0])]))));
}
