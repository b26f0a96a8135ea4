// The workflow document being edited, without the DOM: a new node of
// each type, fresh ids, renaming and removing a node (its edges follow),
// and where an API error's `field` path points (a node, an edge or the
// workflow's own fields).

export const NODE_TYPES = [
  ["agent", "Agent stage"], ["action", "Action (tool call)"], ["updateState", "Update state"],
  ["transfer", "Transfer"], ["end", "End"],
];

export const NODE_ID = /^[a-z][a-z0-9_]{0,63}$/;
export const EDGE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** An empty workflow (the required fields only). */
export function blankWorkflow() {
  return { specVersion: 4, name: "", systemPrompt: "", dynamicVariables: [], builtInTools: {}, nodes: [], edges: [] };
}

/** A name not taken yet: `base`, `base_2`, `base_3`… */
export function freshId(base, taken) {
  const used = new Set(taken);
  if (!used.has(base)) return base;
  for (let i = 2; ; i++) if (!used.has(`${base}_${i}`)) return `${base}_${i}`;
}

/** A new node of `type` with what its type requires. */
export function blankNode(type, doc) {
  const id = freshId(type === "updateState" ? "update_state" : type, doc.nodes.map((n) => n.id));
  switch (type) {
    case "agent": return { id, type, prompt: "", entryBehavior: "respond" };
    case "action": return { id, type, binding: { toolId: "" } };
    case "updateState": return { id, type, rules: [] };
    case "transfer": return { id, type, target: { type: "human" } };
    default: return { id, type: "end", reason: "workflow_end" };
  }
}

/** The id an edge gets from its endpoints: `greet_to_lookup` (`any_to_…` from `*`). */
function edgeBase(from, to) {
  return `${from === "*" ? "any" : from}_to_${to}`.slice(0, 60);
}

/** Whether `id` is the one derived from these endpoints (`base` or
 * `base_N`), not a name the user gave: such an id follows its endpoints. */
function derivedEdgeId(id, from, to) {
  const base = edgeBase(from, to);
  return id === base || (id.startsWith(`${base}_`) && /^\d+$/.test(id.slice(base.length + 1)));
}

/** The id of an edge whose endpoints became `from` → `to`: derived anew
 * when it was derived from its old ones (`was`), else kept. */
export function followedEdgeId(id, was, from, to, taken) {
  return derivedEdgeId(id, was.from, was.to) ? freshId(edgeBase(from, to), taken) : id;
}

/** A new edge from `from` (the start node or the first node) to `to`. */
export function blankEdge(doc, from, to) {
  const a = from || doc.startNodeId || doc.nodes[0]?.id || "";
  const b = to || doc.nodes.find((n) => n.id !== a)?.id || a;
  const source = doc.nodes.find((n) => n.id === a);
  const condition = source?.type === "action" ? { type: "result", success: true } : { type: "always" };
  return { id: freshId(edgeBase(a, b), doc.edges.map((e) => e.id)), from: a, to: b, condition };
}

/** Rename node `from` to `to` everywhere it is referenced (an edge id
 * derived from its endpoints follows them). */
export function renameNode(doc, from, to) {
  for (const n of doc.nodes) if (n.id === from) n.id = to;
  for (const e of doc.edges) {
    if (e.from !== from && e.to !== from) continue;
    const was = { from: e.from, to: e.to };
    if (e.from === from) e.from = to;
    if (e.to === from) e.to = to;
    e.id = followedEdgeId(e.id, was, e.from, e.to, doc.edges.filter((o) => o !== e).map((o) => o.id));
  }
  if (doc.startNodeId === from) doc.startNodeId = to;
  if (doc.onErrorNodeId === from) doc.onErrorNodeId = to;
}

/** Remove node `index` and the edges that start or end there. */
export function removeNode(doc, index) {
  const [gone] = doc.nodes.splice(index, 1);
  if (!gone) return;
  doc.edges = doc.edges.filter((e) => e.from !== gone.id && e.to !== gone.id);
  if (doc.startNodeId === gone.id) delete doc.startNodeId;
  if (doc.onErrorNodeId === gone.id) delete doc.onErrorNodeId;
}

/**
 * What an error's field path names: `{kind: "node"|"edge", index}` for
 * `nodes[N]…` / `edges[N]…` (when that item exists), else `{kind: "globals"}`.
 */
export function errorTarget(field, doc) {
  const m = /^(nodes|edges)\[(\d+)\]/.exec(field || "");
  if (m) {
    const kind = m[1] === "nodes" ? "node" : "edge";
    const index = Number(m[2]);
    const list = kind === "node" ? doc.nodes : doc.edges;
    if (index < list.length) return { kind, index };
  }
  return { kind: "globals" };
}

/** The body to send: the document without the fields the server sets. */
export function body(doc) {
  const out = structuredClone(doc);
  for (const k of ["id", "createdAt", "updatedAt"]) delete out[k];
  return out;
}
