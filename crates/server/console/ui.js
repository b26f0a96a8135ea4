// Small DOM helpers shared by the pages: element building, labelled
// fields that know their API path, errors shown next to their field, and
// saving or deleting a resource from its editor.

import { post, put, del } from "./api.js";

let uid = 0;

/** Build an element: h("button", {class: "x", onclick: f}, "text", child). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = !!v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/**
 * A labelled field. `path` is the API field it edits (e.g.
 * `toolBindings[0].argumentBindings.city`), so an error naming that path
 * is shown here. `input` is an element or a function of its id.
 */
export function field(label, path, input, hint) {
  const id = `f${++uid}`;
  const control = typeof input === "function" ? input(id) : input;
  control.id = control.id || id;
  const err = h("p", { class: "error", id: `${control.id}-err` });
  control.setAttribute("aria-describedby", `${control.id}-err`);
  return h("div", { class: "field", dataset: { field: path || "" } },
    h("label", { for: control.id }, label), control,
    hint ? h("p", { class: "hint" }, hint) : null, err);
}

export const text = (value, attrs = {}) => h("input", { type: "text", value: value ?? "", ...attrs });
export const area = (value, attrs = {}) => h("textarea", { ...attrs }, value ?? "");
export const checkbox = (label, checked, attrs = {}) => {
  const box = h("input", { type: "checkbox", checked, ...attrs });
  return [h("label", { class: "check" }, box, label), box];
};
export function select(options, value, attrs = {}) {
  const el = h("select", attrs, options.map((o) => {
    const [v, l] = Array.isArray(o) ? o : [o, o];
    return h("option", { value: v, selected: v === value ? "selected" : null }, l);
  }));
  if (value !== undefined) el.value = value;
  return el;
}

export function clearErrors(root) {
  root.querySelectorAll(".field.invalid").forEach((f) => f.classList.remove("invalid"));
  root.querySelectorAll(".field .error").forEach((e) => { e.textContent = ""; });
  root.querySelectorAll("[aria-invalid]").forEach((e) => e.removeAttribute("aria-invalid"));
  root.querySelectorAll(".banner.form-error").forEach((b) => b.remove());
}

/**
 * Show an API error next to the field it names: the field whose path is
 * the error's, else the nearest enclosing path; else a banner on the form.
 */
export function showError(root, err) {
  clearErrors(root);
  let target = null;
  if (err.field) {
    const fields = [...root.querySelectorAll(".field[data-field]")];
    let path = err.field;
    while (path && !target) {
      target = fields.find((f) => f.dataset.field === path);
      const cut = Math.max(path.lastIndexOf("."), path.lastIndexOf("["));
      path = cut > 0 ? path.slice(0, cut) : "";
    }
  }
  const message = err.field ? `${err.message}` : err.message;
  if (target) {
    target.classList.add("invalid");
    target.querySelector(".error").textContent = message;
    // A field folded away (a closed "More") is unfolded to be seen.
    const fold = target.closest("details");
    if (fold) fold.open = true;
    const control = target.querySelector("input, select, textarea");
    if (control) {
      control.setAttribute("aria-invalid", "true");
      control.focus();
    }
    target.scrollIntoView({ block: "center" });
  }
  const banner = h("div", { class: "banner bad form-error", role: "alert" },
    h("strong", {}, err.code || "error"), `: ${err.message}`, err.field ? ` (field ${err.field})` : "");
  root.prepend(banner);
}

/** Go to `hash`; routed again when the address is already there (setting
 * the same hash fires no hashchange, and the page would not change). */
export function go(hash) {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = hash;
}

export function toast(message) {
  const t = h("div", { class: "t" }, message);
  const box = document.getElementById("toast");
  box.append(t);
  while (box.children.length > 2) box.firstChild.remove();
  setTimeout(() => t.remove(), 3500);
}

/**
 * An editable list of rows. `render(item, index)` returns the row's
 * element; `read(rowElement)` gives the item back.
 */
export function rows({ items, render, blank, addLabel }) {
  const box = h("div", { class: "rows" });
  const list = h("div");
  const add = (item) => {
    const i = list.children.length;
    const remove = h("button", { type: "button", class: "link", "aria-label": "Remove row" }, "Remove");
    const row = h("div", { class: "rowwrap" }, render(item, i), remove);
    remove.addEventListener("click", () => row.remove());
    list.append(row);
  };
  (items || []).forEach(add);
  box.append(list, h("button", { type: "button", class: "ghost small", onclick: () => add(blank()) }, addLabel));
  box.rows = () => [...list.children].map((r) => r.firstChild);
  return box;
}

/** A saved value as a text box shows it: a string as itself (`friend`, not
 * `"friend"`) unless it would read back as another kind (`"42"`, `""`),
 * anything else as JSON. `readLiteral` gives it back unchanged. */
export function literalText(value) {
  if (value === undefined) return "";
  if (typeof value !== "string") return JSON.stringify(value);
  let parses = true;
  try { JSON.parse(value); } catch { parses = false; }
  return !parses && value !== "" && value.trim() === value ? value : JSON.stringify(value);
}

/** A text box's value: JSON when it parses, else the (trimmed) text as a string. */
export function readLiteral(textValue) {
  const t = textValue.trim();
  try { return JSON.parse(t); } catch { return t; }
}

/** A string-typed value as its box shows it: as itself, or quoted as JSON
 * when it would read back otherwise (`""`, or text in quotes itself). */
export function stringText(value) {
  if (value === "") return '""';
  try { if (typeof JSON.parse(value) === "string") return JSON.stringify(value); } catch { /* plain text */ }
  return value;
}

/** A string-typed box's value: the text, or a string in JSON quotes (`"Acme"`) unquoted. */
export function readString(textValue) {
  try {
    const v = JSON.parse(textValue);
    if (typeof v === "string") return v;
  } catch { /* plain text */ }
  return textValue;
}

/** Parse a JSON text box; throws a field error naming `path`. */
export function parseJson(textValue, path, fallback) {
  if (!textValue.trim()) return fallback;
  try {
    return JSON.parse(textValue);
  } catch (e) {
    const err = new Error(`not valid JSON: ${e.message}`);
    err.code = "invalid_json";
    err.field = path;
    throw err;
  }
}

export function page(title, ...children) {
  const main = document.getElementById("main");
  main.replaceChildren(h("h1", {}, title), ...children.filter((c) => c !== null && c !== undefined && c !== false));
  document.title = `${title} · rtc-agent`;
  showSaveWarnings(main);
  return main;
}

/** Warnings of the last save (`{hash, what, warnings}`), for the page it leads to. */
let saveWarnings = null;

/**
 * What a save accepted but warned about (`warnings: [{code, field,
 * message}]`, e.g. a URL the outbound guard refuses): a banner above the
 * resource's editor until dismissed, and a note at each field named.
 */
function showSaveWarnings(main) {
  const w = saveWarnings;
  saveWarnings = null;
  if (!w || decodeURIComponent(location.hash) !== w.hash) return;
  const banner = h("div", { class: "banner warn", role: "alert", "aria-label": "Saved with warnings" },
    h("strong", {}, `${w.what} saved, with ${w.warnings.length === 1 ? "a warning" : `${w.warnings.length} warnings`}:`),
    h("ul", {}, w.warnings.map((x) => h("li", { dataset: { code: x.code } },
      x.field && !x.message.includes(x.field) ? [h("code", {}, x.field), " — "] : null, x.message))),
    h("button", { type: "button", class: "ghost small", onclick: () => banner.remove() }, "Dismiss"));
  main.querySelector("h1").after(banner);
  for (const x of w.warnings) {
    const at = x.field && main.querySelector(`.field[data-field="${CSS.escape(x.field)}"]`);
    if (at) at.append(h("p", { class: "hint warn save-warning" }, x.message));
  }
}

export function formatTime(t) {
  return t ? new Date(t).toLocaleString() : "";
}

/** Whether the page shown is still the editor of `id` (an answer that
 * arrives after the user navigated away must not redraw the old page). */
export function stillOn(id) {
  return decodeURIComponent(location.hash).endsWith(`/${id}`);
}

/**
 * Create (POST to `collection`) or replace (PUT to `collection/<id>`) a
 * resource from its editor, then show it: a new one by going to
 * `#/<route>/<its id>`, a replaced one by `redraw(id)` — only while the
 * user is still on that editor. The save's `warnings` show on that page.
 */
export async function saveResource({ collection, route, id, body, what, redraw }) {
  const isNew = id === "new";
  const saved = isNew ? await post(collection, body) : await put(`${collection}/${encodeURIComponent(id)}`, body);
  toast(`${what} ${saved.name} saved`);
  saveWarnings = saved.warnings?.length ? { hash: `#/${route}/${saved.id}`, what: `${what} ${saved.name}`, warnings: saved.warnings } : null;
  if (isNew) {
    if (stillOn("new")) location.hash = `#/${route}/${encodeURIComponent(saved.id)}`;
  } else if (stillOn(id)) {
    redraw(saved.id);
  }
  return saved;
}

/** Delete the resource an editor shows, after asking; back to its list. */
export async function removeResource({ form, collection, route, id, what }) {
  if (!confirm(`Delete this ${what}?`)) return;
  try {
    await del(`${collection}/${encodeURIComponent(id)}`);
    toast(`${what} deleted`);
    location.hash = `#/${route}`;
  } catch (e) {
    showError(form, e);
  }
}

/** What model calls cost, in one line. */
export function usageLine(u) {
  const n = (x) => Number(x || 0).toLocaleString("en-US");
  return `${n(u.calls)} model calls · ${n(u.inputTokens)} input tokens (${n(u.cachedTokens)} cached) · ${n(u.outputTokens)} output tokens`;
}

/** Links to `assistants` ({id, name}), separated by commas. */
export function assistantLinks(assistants) {
  return assistants.flatMap((a, i) => [i ? ", " : "", h("a", { href: `#/assistants/${encodeURIComponent(a.id)}` }, a.name)]);
}
