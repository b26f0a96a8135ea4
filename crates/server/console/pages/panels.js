// The playground's live side panels: variables, todo list, goals, loops
// and the sub-agent tree.

import { h, literalText } from "../ui.js";

export function variablesPanel(vars) {
  const entries = Object.entries(vars || {}).filter(([k]) => !k.startsWith("system__") || k === "system__turn_count");
  return entries.length
    ? h("dl", { class: "vars" }, entries.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v === "" ? '""' : literalText(v))]))
    : h("p", { class: "muted small" }, "No variables.");
}

const TODO_MARK = { pending: "○", in_progress: "◐", completed: "●" };

export function todoPanel(todos) {
  if (!todos || !todos.length) return h("p", { class: "muted small" }, "The model has no todo list yet.");
  return h("ol", { class: "todo", "aria-label": "Todo list" }, todos.map((t) =>
    h("li", { dataset: { status: t.status } }, h("span", { "aria-hidden": "true" }, `${TODO_MARK[t.status] || "○"} `),
      t.status === "in_progress" && t.active_form ? t.active_form : t.content,
      h("span", { class: "sr-only" }, ` (${t.status.replace("_", " ")})`))));
}

export function goalsPanel(goals) {
  if (!goals || !goals.length) return h("p", { class: "muted small" }, "No goals.");
  return h("ul", {}, goals.map((g) => h("li", {},
    h("span", { class: `pill ${g.status === "completed" ? "ok" : g.status === "active" ? "" : "bad"}` }, g.status), " ",
    g.condition, h("div", { class: "status" }, `turn ${g.completedTurns}/${g.maxTurns}${g.reason ? ` · ${g.reason}` : ""}`))));
}

export function loopsPanel(loops) {
  if (!loops || !loops.length) return h("p", { class: "muted small" }, "No loops.");
  return h("ul", {}, loops.map((l) => h("li", {},
    h("span", { class: "pill" }, l.status), " ", l.prompt,
    h("div", { class: "status" }, `every ${l.intervalSeconds} s · ${l.turnsDone}/${l.maxTurns} turns · ${l.skippedTicks || 0} skipped`))));
}

function treeNode(n) {
  return h("li", {},
    h("span", {}, n.title || "this session"), " ",
    h("span", { class: `pill ${n.status === "ended" ? "bad" : n.running ? "" : "ok"}` }, n.status === "ended" ? (n.endReason || "ended") : n.running ? "working" : n.depth ? "reported" : "active"),
    n.mode ? h("span", { class: "status" }, ` ${n.mode}`) : null,
    n.children.length ? h("ul", {}, n.children.map(treeNode)) : null);
}

export function treePanel(tree) {
  if (!tree || !tree.children || !tree.children.length) return h("p", { class: "muted small" }, "No sub-agents.");
  return h("div", { class: "tree" }, h("ul", {}, tree.children.map(treeNode)));
}
