// Workflows: the list, and the editor — the graph (drawn by
// workflows/graph.js) beside the form of what is selected (a node, an
// edge, or the workflow's own settings). Forms write into the document as
// they are edited; Save sends the whole document. A validation error is
// shown at what its `field` names: the node or edge is selected, marked in
// the graph, and the error sits next to its field.

import { get, list, post, put } from "../api.js";
import { h, page, field, area, select, showError, clearErrors, toast, stillOn, removeResource, parseJson } from "../ui.js";
import { graphView } from "./workflows/graph.js";
import { nodeForm } from "./workflows/nodes.js";
import { edgeForm } from "./workflows/edges.js";
import { globalsForm } from "./workflows/globals.js";
import { targetTabs } from "./tests.js";
import { NODE_TYPES, NODE_ID, blankWorkflow, blankNode, blankEdge, renameNode, removeNode, errorTarget, body } from "./workflows/model.js";

export async function workflowsPage() {
  const items = await list("/v1/workflows");
  page("Workflows",
    h("div", { class: "actions" }, h("a", { href: "#/workflows/new" }, h("button", { type: "button", tabindex: -1 }, "New workflow"))),
    items.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Start"), h("th", {}, "Nodes"), h("th", {}, "Edges"), h("th", {}, ""))),
      h("tbody", {}, items.map((w) => h("tr", {},
        h("td", {}, h("a", { href: `#/workflows/${encodeURIComponent(w.id)}` }, w.name)),
        h("td", {}, w.startNodeId || ""),
        h("td", {}, String((w.nodes || []).length)),
        h("td", {}, String((w.edges || []).length)),
        h("td", {}, h("a", { href: `#/playground?workflow=${encodeURIComponent(w.id)}` }, "Try in playground"))))))
      : h("p", { class: "muted" }, "No workflows yet. A workflow joins agent stages, tool actions, state updates, transfers and ends with edges."));
}

export async function workflowEditor(id) {
  const isNew = id === "new";
  const [loaded, tools, assistants, interfaces] = await Promise.all([
    isNew ? Promise.resolve(blankWorkflow()) : get(`/v1/workflows/${encodeURIComponent(id)}`),
    list("/v1/tools"), list("/v1/assistants"), list("/v1/realtime-interfaces"),
  ]);
  let doc = structuredClone(loaded);
  let selection = null; // {kind: "node"|"edge", index}, or null: the settings
  let invalid = null;
  let form = null;
  let dirty = false;
  const side = h("aside", { class: "wf-side", "aria-label": "Selected item" });
  const unsaved = h("span", { class: "status", role: "status" });
  const graph = graphView({
    draggable: true,
    onSelect: (kind, index) => choose({ kind, index }),
    onMove: (index, p) => { doc.nodes[index].position = p; touch(); drawGraph(); },
  });

  const variables = () => (selection === null && form?.variables ? form.variables() : (doc.dynamicVariables || []).filter((v) => v.name));
  const touch = () => { dirty = true; unsaved.textContent = "unsaved changes"; };
  const drawGraph = () => graph.draw(doc, { selected: selection, invalid });

  /** Write the open form into the document (throws a field error). */
  function apply() {
    if (!form || !form.dirty || selection?.kind === "json") return;
    if (selection?.kind === "node") {
      const n = form.read();
      const at = doc.nodes[selection.index];
      if (at?.position) n.position = at.position; else delete n.position;
      doc.nodes[selection.index] = n;
    } else if (selection?.kind === "edge") {
      doc.edges[selection.index] = form.read();
    } else {
      form.read(doc);
    }
  }

  function nodeCtx(index) {
    return {
      tools, assistants, variables,
      variableNames: () => variables().map((v) => v.name),
      globals: () => doc.builtInTools,
      isStart: () => doc.startNodeId === doc.nodes[index].id,
      rename: (from, to) => {
        if (!NODE_ID.test(to)) return "A node id starts with a lower-case letter; then lower case, digits or _ (up to 64).";
        if (doc.nodes.some((n, i) => i !== index && n.id === to)) return `Another node is called ${to}.`;
        renameNode(doc, from, to);
        touch();
        drawGraph();
        return null;
      },
      makeStart: () => { doc.startNodeId = doc.nodes[index].id; touch(); open(); },
      addEdge: () => { if (tryApply()) addEdge(doc.nodes[index].id); },
      remove: () => { removeNode(doc, index); touch(); selection = null; invalid = null; open(); },
    };
  }

  /** The whole document as JSON, to read, paste or edit by hand. */
  function jsonForm() {
    const textBox = area(JSON.stringify(body(doc), null, 2), { rows: 24, spellcheck: "false" });
    const f = h("form", { class: "wf-form", "aria-label": "Workflow JSON" }, h("h2", {}, "Workflow JSON"),
      field("Document (specVersion 4)", "", textBox, "Apply replaces the document being edited; Save sends it."),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "ghost" }, "Apply JSON")));
    f.addEventListener("submit", (ev) => {
      ev.preventDefault();
      try {
        const next = parseJson(textBox.value, "", null);
        if (!next || !Array.isArray(next.nodes)) throw Object.assign(new Error("a workflow document has a nodes array"), { code: "invalid_json" });
        if (!Array.isArray(next.edges)) next.edges = [];
        doc = { ...next, ...(isNew ? {} : { id }) };
        f.dirty = false;
        touch();
        selection = null;
        invalid = null;
        open();
        toast("JSON applied");
      } catch (e) { showError(side, e); }
    });
    return f;
  }

  function open() {
    clearErrors(side);
    if (selection?.kind === "json") {
      form = jsonForm();
    } else if (selection?.kind === "node" && doc.nodes[selection.index]) {
      form = nodeForm(structuredClone(doc.nodes[selection.index]), selection.index, nodeCtx(selection.index));
    } else if (selection?.kind === "edge" && doc.edges[selection.index]) {
      const index = selection.index;
      form = edgeForm(doc.edges[index], index, {
        nodes: () => doc.nodes, variables, count: () => doc.edges.length,
        otherIds: () => doc.edges.filter((_, i) => i !== index).map((e) => e.id),
        remove: () => { doc.edges.splice(index, 1); touch(); selection = null; invalid = null; open(); },
        move: (delta) => {
          if (!tryApply()) return;
          const [e] = doc.edges.splice(index, 1);
          doc.edges.splice(index + delta, 0, e);
          selection = { kind: "edge", index: index + delta };
          touch();
          open();
        },
      });
    } else {
      selection = null;
      form = globalsForm(doc, { tools, interfaces });
    }
    // Edits reach the document (and the drawing) as they are made.
    const changed = () => {
      if (selection?.kind === "json") return;
      form.dirty = true;
      touch();
      try { apply(); drawGraph(); } catch { /* shown on save or when leaving the form */ }
    };
    form.addEventListener("input", changed);
    form.addEventListener("change", changed);
    side.replaceChildren(form);
    drawGraph();
  }

  /** Apply the open form; on a field error show it and stay. */
  function tryApply() {
    try { apply(); return true; } catch (e) { showError(side, e); return false; }
  }

  function choose(next) {
    if (!tryApply()) return;
    selection = next;
    open();
  }

  function addEdge(from) {
    const edge = blankEdge(doc, from);
    doc.edges.push(edge);
    selection = { kind: "edge", index: doc.edges.length - 1 };
    touch();
    open();
  }

  const type = select(NODE_TYPES, "agent", { "aria-label": "Type of the new node" });
  const addNode = () => {
    if (!tryApply()) return;
    const node = blankNode(type.value, doc);
    doc.nodes.push(node);
    if (!doc.startNodeId && node.type !== "end") doc.startNodeId = node.id;
    selection = { kind: "node", index: doc.nodes.length - 1 };
    touch();
    open();
  };

  async function save() {
    if (!tryApply()) return;
    clearErrors(side);
    try {
      const saved = isNew ? await post("/v1/workflows", body(doc)) : await put(`/v1/workflows/${encodeURIComponent(id)}`, body(doc));
      toast(`Workflow ${saved.name} saved`);
      dirty = false;
      unsaved.textContent = "";
      if (isNew) {
        if (stillOn("new")) location.hash = `#/workflows/${encodeURIComponent(saved.id)}`;
        return;
      }
      doc = structuredClone(saved);
      invalid = null;
      open();
    } catch (e) {
      const target = errorTarget(e.field, doc);
      selection = target.kind === "globals" ? null : target;
      invalid = target.kind === "globals" ? null : target;
      open();
      showError(side, e);
    }
  }

  const toolbar = h("div", { class: "actions wf-toolbar" },
    h("button", { type: "button", onclick: save }, isNew ? "Create workflow" : "Save"),
    type, h("button", { type: "button", class: "ghost", onclick: addNode }, "Add node"),
    h("button", { type: "button", class: "ghost", onclick: () => { if (tryApply()) addEdge(selection?.kind === "node" ? doc.nodes[selection.index].id : undefined); } }, "Add edge"),
    h("button", { type: "button", class: "ghost", onclick: () => choose(null) }, "Workflow settings"),
    h("button", { type: "button", class: "ghost", onclick: () => choose({ kind: "json" }) }, "JSON"),
    isNew ? null : h("a", { href: `#/playground?workflow=${encodeURIComponent(id)}` }, "Open in playground"),
    isNew ? null : h("button", { type: "button", class: "danger", onclick: () => removeResource({ form: side, collection: "/v1/workflows", route: "workflows", id, what: "workflow" }) }, "Delete"),
    unsaved);
  page(isNew ? "New workflow" : `Workflow ${loaded.name}`,
    isNew ? null : targetTabs("workflows", id, "settings"),
    toolbar,
    h("div", { class: "wf-editor" }, h("section", { class: "card wf-graph-card", "aria-label": "Graph" },
      h("p", { class: "hint" }, "Click a node or an edge to edit it; drag a node to move it."), graph.el), side));
  open();
  return () => { if (dirty) toast("Unsaved workflow changes were discarded"); };
}
