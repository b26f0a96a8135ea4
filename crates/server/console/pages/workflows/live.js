// The playground's live workflow panel: the workflow's graph with the
// current node highlighted, the nodes visited (with their visit counts)
// and the edges taken, from the session's position and then from its
// `workflow.node_entered` / `workflow.evaluated` events.

import { get } from "../../api.js";
import { h } from "../../ui.js";
import { graphView } from "./graph.js";

/** The edges a path of node ids most likely took (first matching edge). */
function edgesOfPath(doc, path) {
  const out = new Set();
  for (let i = 1; i < path.length; i++) {
    const e = doc.edges.find((x) => x.from === path[i - 1] && x.to === path[i]) || doc.edges.find((x) => x.from === "*" && x.to === path[i]);
    if (e) out.add(e.id);
  }
  return out;
}

/** The panel of a workflow session `s` (from GET /v1/sessions/{id}). */
export async function workflowPanel(s) {
  const doc = await get(`/v1/workflows/${encodeURIComponent(s.workflowId)}`);
  const position = s.workflow || { currentNodeId: null, visits: {}, path: [] };
  let current = position.currentNodeId;
  const visits = { ...(position.visits || {}) };
  const taken = edgesOfPath(doc, position.path || []);
  const here = h("p", { class: "status", role: "status", "aria-label": "Current node" });
  const last = h("p", { class: "status" });
  const graph = graphView({ draggable: false, label: "Workflow graph (live)", onSelect: (kind, i) => {
    const item = kind === "node" ? doc.nodes[i] : doc.edges[i];
    last.textContent = kind === "node" ? `${item.id} (${item.type}): visited ${visits[item.id] || 0} time(s)` : `edge ${item.id}: ${item.from} → ${item.to}`;
  } });
  const draw = () => {
    here.textContent = current ? `Current node: ${current}` : "Not in a node yet";
    graph.draw(doc, { current, visits, taken });
  };
  const card = h("section", { class: "card wf-live", "aria-label": "Workflow" },
    h("h2", {}, "Workflow ", h("a", { href: `#/workflows/${encodeURIComponent(doc.id)}` }, doc.name)), here, graph.el, last);
  draw();
  return {
    card,
    /** Feed a session event; returns a line for the chat log, or null. */
    onEvent(e) {
      if (e.type === "workflow.node_entered") {
        current = e.nodeId;
        visits[e.nodeId] = Math.max(visits[e.nodeId] || 0, e.visit || 1);
        if (e.edgeId) taken.add(e.edgeId);
        draw();
        return `entered ${e.nodeId}${e.nodeType ? ` (${e.nodeType})` : ""} ${e.edgeId ? `via ${e.edgeId}` : "at the start"}, visit ${e.visit}`;
      }
      if (e.type === "workflow.evaluated") {
        const judged = e.llm ? ` · judge: ${Object.entries(e.llm).map(([k, v]) => `${k} ${v ? "✓" : "✗"}`).join(", ")}` : "";
        last.textContent = `${e.nodeId}: ${e.taken ? `took ${e.taken}` : "no edge held, stays"}${judged}`;
        return e.taken ? null : `stays at ${e.nodeId}${judged}`;
      }
      return null;
    },
  };
}
