// The workflow graph, drawn as SVG: nodes as boxes coloured by type (the
// start node marked), edges as arrows labelled by their condition kind,
// global edges (`from: "*"`) dashed from an "any agent" marker. A node
// sits at its `position`, else where a layered layout puts it (columns by
// BFS depth from the start). Nodes can be dragged (the new position is
// reported) and nodes and edges selected by click or keyboard; the live
// view marks the current node, the nodes visited and the edges taken.

import { print } from "../../expr.js";

const NS = "http://www.w3.org/2000/svg";
export const NODE_W = 156;
export const NODE_H = 60;
const COL = 270;
const ROW = 110;
const MARGIN = 40;

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v);
  for (const c of children) if (c) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

const TYPE_LABEL = { agent: "agent", action: "action", updateState: "update state", transfer: "transfer", end: "end" };

/** Each node's top-left corner: its `position`, else the layered layout. */
export function layout(doc) {
  const depth = new Map();
  const start = doc.startNodeId;
  if (start && doc.nodes.some((n) => n.id === start)) {
    depth.set(start, 0);
    const queue = [start];
    while (queue.length) {
      const id = queue.shift();
      for (const e of doc.edges) {
        if (e.from === id && !depth.has(e.to) && doc.nodes.some((n) => n.id === e.to)) {
          depth.set(e.to, depth.get(id) + 1);
          queue.push(e.to);
        }
      }
    }
  }
  const last = depth.size ? Math.max(...depth.values()) + 1 : 0;
  const rows = new Map();
  const out = new Map();
  for (const n of doc.nodes) {
    const d = depth.has(n.id) ? depth.get(n.id) : last;
    const r = rows.get(d) || 0;
    rows.set(d, r + 1);
    const auto = { x: MARGIN + d * COL, y: MARGIN + 70 + r * ROW };
    const p = n.position;
    out.set(n.id, p && Number.isFinite(p.x) && Number.isFinite(p.y) ? { x: p.x, y: p.y } : auto);
  }
  return out;
}

/** The short label of an edge's condition. */
export function conditionLabel(c) {
  switch (c?.type) {
    case "always": return "always";
    case "expression": return "expression";
    case "llm": return "llm";
    case "result": return c.success ? "result ✓" : "result ✗";
    default: return "?";
  }
}

function conditionDetail(c) {
  try {
    if (c?.type === "expression") return print(c.expression);
  } catch { /* shown as kind only */ }
  if (c?.type === "llm") return c.condition;
  return conditionLabel(c);
}

// Where the line from a box's centre towards (dx, dy) leaves the box.
function clip(cx, cy, dx, dy) {
  const len = Math.hypot(dx, dy) || 1;
  const ux = dx / len; const uy = dy / len;
  const t = Math.min(ux ? (NODE_W / 2 + 4) / Math.abs(ux) : Infinity, uy ? (NODE_H / 2 + 4) / Math.abs(uy) : Infinity);
  return [cx + ux * t, cy + uy * t];
}

function defs() {
  const marker = (id) => s("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 11, markerHeight: 11, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse", class: id },
    s("path", { d: "M0,0 L10,5 L0,10 z" }));
  return s("defs", {}, ...["wf-arrow", "wf-arrow-global", "wf-arrow-selected", "wf-arrow-taken", "wf-arrow-invalid"].map(marker));
}

/**
 * A graph view. `onSelect(kind, index)` is called when a node or edge is
 * chosen, `onMove(index, {x, y})` when a node was dragged (only when
 * `draggable`). `draw(doc, marks)` redraws; marks: `selected`/`invalid`
 * `{kind, index}`, and for the live view `current` (a node id),
 * `visits` ({id: n}) and `taken` (a Set of edge ids).
 */
export function graphView({ onSelect, onMove, draggable, label = "Workflow graph" }) {
  const svg = s("svg", { class: "wf-graph", role: "group", "aria-label": label });
  const box = document.createElement("div");
  box.className = "wf-canvas";
  box.append(svg);
  let doc = { nodes: [], edges: [] };
  let marks = {};
  let pos = new Map();
  let edgeLayer = null;
  // While a node is held, redraws wait (a form's change event on blur
  // must not replace the element being dragged).
  let holding = false;
  let deferred = null;

  const centre = (id) => {
    if (id === "*") return [anyPos.x + 60, anyPos.y + 16, 60, 16];
    const p = pos.get(id);
    return p ? [p.x + NODE_W / 2, p.y + NODE_H / 2, NODE_W / 2, NODE_H / 2] : null;
  };
  let anyPos = { x: MARGIN, y: MARGIN };

  function edgeState(e, i) {
    if (marks.invalid?.kind === "edge" && marks.invalid.index === i) return "invalid";
    if (marks.selected?.kind === "edge" && marks.selected.index === i) return "selected";
    if (marks.taken?.has(e.id)) return "taken";
    return e.from === "*" ? "global" : "";
  }

  function drawEdges() {
    const layer = s("g", { class: "wf-edges" });
    const pairs = new Map();
    doc.edges.forEach((e) => {
      const key = [e.from, e.to].sort().join("\u0000");
      pairs.set(key, (pairs.get(key) || 0) + 1);
    });
    const seen = new Map();
    doc.edges.forEach((e, i) => {
      const a = centre(e.from);
      const b = centre(e.to);
      const state = edgeState(e, i);
      const g = s("g", {
        class: `wf-edge ${e.from === "*" ? "global" : ""} ${state}`.trim(), tabindex: 0, role: "button",
        "aria-label": `Edge ${e.id}: ${e.from} to ${e.to}, ${conditionLabel(e.condition)}`,
        "data-edge-id": e.id, "data-index": i,
      });
      g.append(s("title", {}, `${e.id}: ${e.from} → ${e.to} · ${conditionDetail(e.condition)}`));
      let d; let lx; let ly;
      if (!a || !b) {
        // A dangling end: a short stub from the end that exists.
        const [x, y] = a || b || [MARGIN, MARGIN];
        d = a ? `M${x + NODE_W / 2},${y} l40,-30` : `M${x - NODE_W / 2 - 40},${y - 30} L${x - NODE_W / 2},${y}`;
        lx = x + (a ? NODE_W / 2 + 40 : -NODE_W / 2 - 40); ly = y - 36;
        g.classList.add("dangling");
      } else if (e.from === e.to) {
        const [cx, cy] = a;
        const top = cy - NODE_H / 2;
        const k = seen.get(e.from + "\u0001") || 0;
        seen.set(e.from + "\u0001", k + 1);
        const r = 50 + k * 22;
        d = `M${cx - 24},${top} C${cx - r},${top - r - 10} ${cx + r},${top - r - 10} ${cx + 24},${top}`;
        lx = cx; ly = top - r * 0.75 - 6;
      } else {
        const key = [e.from, e.to].sort().join("\u0000");
        const k = seen.get(key) || 0;
        seen.set(key, k + 1);
        const count = pairs.get(key);
        const offset = (k - (count - 1) / 2) * 44;
        const [lo, hi] = e.from < e.to ? [a, b] : [b, a];
        const len = Math.hypot(hi[0] - lo[0], hi[1] - lo[1]) || 1;
        const nx = -(hi[1] - lo[1]) / len; const ny = (hi[0] - lo[0]) / len;
        const mx = (a[0] + b[0]) / 2; const my = (a[1] + b[1]) / 2;
        const cx = mx + nx * offset * 2; const cy = my + ny * offset * 2;
        const [sx, sy] = e.from === "*" ? [a[0], a[1] + a[3]] : clip(a[0], a[1], cx - a[0], cy - a[1]);
        const [tx, ty] = clip(b[0], b[1], cx - b[0], cy - b[1]);
        d = `M${sx},${sy} Q${cx},${cy} ${tx},${ty}`;
        lx = (sx + 2 * cx + tx) / 4; ly = (sy + 2 * cy + ty) / 4;
      }
      const marker = { global: "wf-arrow-global", selected: "wf-arrow-selected", taken: "wf-arrow-taken", invalid: "wf-arrow-invalid" }[state] || "wf-arrow";
      const text = conditionLabel(e.condition);
      const w = text.length * 7 + 12;
      g.append(s("path", { class: "hit", d }), s("path", { class: "line", d, "marker-end": `url(#${marker})` }),
        s("rect", { class: "label-bg", x: lx - w / 2, y: ly - 10, width: w, height: 18, rx: 4 }),
        s("text", { class: "label", x: lx, y: ly + 3, "text-anchor": "middle" }, text));
      const pick = () => onSelect?.("edge", i);
      g.addEventListener("click", pick);
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(); } });
      layer.append(g);
    });
    if (edgeLayer) edgeLayer.replaceWith(layer);
    edgeLayer = layer;
    return layer;
  }

  function nodeElement(n, i) {
    const p = pos.get(n.id);
    const classes = ["wf-node"];
    if (n.id === doc.startNodeId) classes.push("start");
    if (marks.selected?.kind === "node" && marks.selected.index === i) classes.push("selected");
    if (marks.invalid?.kind === "node" && marks.invalid.index === i) classes.push("invalid");
    if (marks.current === n.id) classes.push("current");
    if (marks.visits?.[n.id]) classes.push("visited");
    const g = s("g", {
      class: classes.join(" "), transform: `translate(${p.x},${p.y})`, tabindex: 0, role: "button",
      "aria-label": `Node ${n.id} (${TYPE_LABEL[n.type] || n.type})${n.id === doc.startNodeId ? ", start" : ""}${marks.current === n.id ? ", current" : ""}`,
      "data-node-id": n.id, "data-type": n.type, "data-index": i,
      "aria-current": marks.current === n.id ? "step" : null,
    });
    g.append(s("rect", { class: "box", width: NODE_W, height: NODE_H, rx: 9 }),
      s("text", { class: "type", x: 12, y: 20 }, TYPE_LABEL[n.type] || n.type),
      s("text", { class: "id", x: 12, y: 42 }, n.id.length > 17 ? `${n.id.slice(0, 16)}…` : n.id));
    if (n.id === doc.startNodeId) {
      g.append(s("rect", { class: "start-badge", x: NODE_W - 52, y: -10, width: 48, height: 18, rx: 9 }),
        s("text", { class: "start-text", x: NODE_W - 28, y: 3, "text-anchor": "middle" }, "start"));
    }
    const v = marks.visits?.[n.id];
    if (v) g.append(s("text", { class: "visits", x: NODE_W - 10, y: 42, "text-anchor": "end" }, `×${v}`));
    wire(g, n, i);
    return g;
  }

  function wire(g, n, i) {
    g.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); onSelect?.("node", i); } });
    g.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      const from = { ...pos.get(n.id) };
      const sx = ev.clientX; const sy = ev.clientY;
      const scale = svg.getScreenCTM()?.a || 1;
      let moved = false;
      holding = true;
      g.setPointerCapture(ev.pointerId);
      const move = (m) => {
        const dx = (m.clientX - sx) / scale; const dy = (m.clientY - sy) / scale;
        if (!moved && Math.hypot(dx, dy) < 4) return;
        if (!draggable) return;
        moved = true;
        const p = { x: Math.round(from.x + dx), y: Math.round(from.y + dy) };
        pos.set(n.id, p);
        g.setAttribute("transform", `translate(${p.x},${p.y})`);
        drawEdges();
      };
      const up = () => {
        g.removeEventListener("pointermove", move);
        g.removeEventListener("pointerup", up);
        g.removeEventListener("pointercancel", up);
        holding = false;
        const waiting = deferred;
        deferred = null;
        if (waiting && !moved) draw(...waiting); // a move redraws through onMove
        if (moved) onMove?.(i, pos.get(n.id));
        else onSelect?.("node", i);
      };
      g.addEventListener("pointermove", move);
      g.addEventListener("pointerup", up);
      g.addEventListener("pointercancel", up);
    });
  }

  function draw(nextDoc, nextMarks = {}) {
    if (holding) { deferred = [nextDoc, nextMarks]; return; }
    doc = nextDoc;
    marks = nextMarks;
    pos = layout(doc);
    const xs = [...pos.values()].map((p) => p.x);
    const ys = [...pos.values()].map((p) => p.y);
    const minX = Math.min(MARGIN, ...xs) - MARGIN;
    const minY = Math.min(MARGIN + 70, ...ys) - MARGIN - 70;
    const maxX = Math.max(MARGIN + NODE_W, ...xs.map((x) => x + NODE_W)) + MARGIN + 60;
    const maxY = Math.max(MARGIN + NODE_H, ...ys.map((y) => y + NODE_H)) + MARGIN;
    anyPos = { x: Math.round((Math.min(...xs, MARGIN) + Math.max(...xs.map((x) => x + NODE_W), MARGIN + NODE_W)) / 2 - 60), y: minY + 10 };
    svg.setAttribute("viewBox", `${minX} ${minY} ${maxX - minX} ${maxY - minY}`);
    svg.setAttribute("width", maxX - minX);
    svg.setAttribute("height", maxY - minY);
    edgeLayer = null;
    const hasGlobal = doc.edges.some((e) => e.from === "*");
    const any = hasGlobal ? s("g", { class: "wf-any", transform: `translate(${anyPos.x},${anyPos.y})` },
      s("rect", { width: 120, height: 32, rx: 16 }), s("text", { x: 60, y: 21, "text-anchor": "middle" }, "any agent (*)")) : null;
    svg.replaceChildren(...[defs(), drawEdges(), any, s("g", { class: "wf-nodes" }, ...doc.nodes.map(nodeElement))].filter(Boolean));
  }

  return { el: box, svg, draw };
}
