// The workflow editor in a real browser: the expression editor's text
// round-trips the design's expressions; the §5 workflow pasted as JSON
// into a new workflow, created, and drawn with its 5 nodes and 6 edges; a stage's
// prompt edited and a node dragged, saved and read back unchanged
// otherwise; invalid changes (an llm edge leaving an action, `resolved`
// removed) shown at the edge and the node they name; a small workflow made
// and deleted through the forms.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { scenario, BASE, KEY } from "./lib.mjs";

const FIXTURE = JSON.parse(readFileSync("crates/cli/tests/fixtures/workflows/order_support_v4.json", "utf8"));

async function readBack(id) {
  const resp = await fetch(`${BASE}/v1/workflows/${encodeURIComponent(id)}`, { headers: { Authorization: `Bearer ${KEY}` } });
  assert.equal(resp.status, 200);
  return resp.json();
}

/** The document without what the server adds and what the editor moved. */
function comparable(doc) {
  const out = structuredClone(doc);
  for (const k of ["id", "createdAt", "updatedAt"]) delete out[k];
  for (const n of out.nodes) delete n.position;
  return out;
}

await scenario("workflows", async (t) => {
  const { page } = t;
  await t.signIn();

  t.step = "the expression editor's text round-trips every expression of the design's example";
  const exprs = [
    ...FIXTURE.edges.filter((e) => e.condition.type === "expression").map((e) => e.condition.expression),
    ...FIXTURE.nodes.flatMap((n) => [...(n.rules || []), ...(n.builtInTools?.updateState?.rules || [])]).map((r) => r.expression),
  ];
  const texts = await page.evaluate(async (list) => {
    const { parse, print } = await import("/console/expr.js");
    return list.map((e) => ({ text: print(e), back: parse(print(e)) }));
  }, exprs);
  assert.equal(texts.length, 4);
  texts.forEach(({ back }, i) => assert.deepEqual(back, exprs[i]));
  assert.deepEqual(texts.map((x) => x.text), [
    'order_id != ""', "needs_human",
    'llm("The order number the user gave", string)',
    'order_status == "lost" or order_status == "damaged"',
  ]);

  t.step = "a new workflow from the design's example pasted as JSON, created";
  await page.getByRole("link", { name: "Workflows", exact: true }).click();
  await page.getByRole("heading", { name: "Workflows" }).waitFor();
  await page.getByRole("button", { name: "New workflow" }).click();
  await page.getByRole("heading", { name: "New workflow" }).waitFor();
  await page.getByRole("button", { name: "JSON", exact: true }).click();
  await page.getByLabel("Document (specVersion 4)").fill(JSON.stringify(FIXTURE));
  await page.getByRole("button", { name: "Apply JSON" }).click();
  const graph = page.getByRole("group", { name: "Workflow graph" });
  await graph.locator("g.wf-node").nth(4).waitFor();
  await Promise.all([
    page.waitForResponse((r) => r.url().endsWith("/v1/workflows") && r.request().method() === "POST" && r.status() === 201),
    page.getByRole("button", { name: "Create workflow" }).click(),
  ]);
  await page.getByRole("heading", { name: "Workflow Order support" }).waitFor();
  const ID = decodeURIComponent(page.url().split("/workflows/")[1]);
  assert.deepEqual(comparable(await readBack(ID)), FIXTURE, "created exactly as pasted");

  t.step = "the workflow in the list, its graph drawn: 5 nodes, 6 edges, the start marked";
  await page.getByRole("link", { name: "Workflows", exact: true }).click();
  await page.getByRole("link", { name: "Order support" }).click();
  await page.getByRole("heading", { name: "Workflow Order support" }).waitFor();
  await graph.locator("g.wf-node").first().waitFor();
  assert.equal(await graph.locator("g.wf-node").count(), 5);
  assert.equal(await graph.locator("g.wf-edge").count(), 6);
  assert.deepEqual(await graph.locator("g.wf-node").evaluateAll((els) => els.map((e) => [e.dataset.nodeId, e.dataset.type])),
    [["greet", "agent"], ["lookup_order", "action"], ["assess", "updateState"], ["wrap_up", "end"], ["to_human", "transfer"]]);
  assert.equal(await graph.locator("g.wf-node.start").getAttribute("data-node-id"), "greet");
  assert.deepEqual(await graph.locator("g.wf-edge .label").evaluateAll((els) => els.map((e) => e.textContent)),
    ["expression", "llm", "result ✓", "result ✗", "expression", "always"]);
  await t.shot("01-graph");

  t.step = "edit greet's prompt, drag wrap_up, save; the API holds exactly that";
  await graph.getByRole("button", { name: /^Node greet/ }).click();
  const form = page.getByRole("form", { name: "Node greet" });
  assert.equal(await form.getByLabel("Prompt", { exact: true }).inputValue(), "Ask for the order number.");
  assert.equal(await form.getByLabel("updateState in this stage").inputValue(), "set");
  assert.equal(await form.getByLabel("endConversation in this stage").inputValue(), "inherit");
  assert.equal(await form.getByLabel("Rule 1: new value").inputValue(), 'llm("The order number the user gave", string)');
  await form.getByLabel("Prompt", { exact: true }).fill("Ask for the order number, politely.");
  const box = await graph.locator('g.wf-node[data-node-id="wrap_up"]').boundingBox();
  await page.mouse.move(box.x + 30, box.y + 20);
  await page.mouse.down();
  await page.mouse.move(box.x + 30, box.y + 140, { steps: 6 });
  await page.mouse.up();
  await page.getByText("unsaved changes").waitFor();
  await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/v1/workflows/${ID}`) && r.request().method() === "PUT" && r.status() === 200),
    page.getByRole("button", { name: "Save", exact: true }).click(),
  ]);
  await page.getByText("Workflow Order support saved").last().waitFor();
  const saved = await readBack(ID);
  const expected = structuredClone(FIXTURE);
  expected.nodes[0].prompt = "Ask for the order number, politely.";
  assert.deepEqual(comparable(saved), expected, "only the prompt changed");
  const moved = saved.nodes.find((n) => n.id === "wrap_up").position;
  assert.ok(moved && Number.isFinite(moved.x) && Number.isFinite(moved.y), "the dragged node's position is saved");
  assert.equal(saved.nodes.filter((n) => n.position).length, 1, "only the dragged node got a position");
  await t.shot("02-saved");

  t.step = "an llm condition on an edge leaving an action: the error is at that edge";
  await graph.getByRole("button", { name: /^Edge lookup_ok/ }).click();
  const edge = page.getByRole("form", { name: "Edge lookup_ok" });
  await edge.getByLabel("Condition", { exact: true }).selectOption("llm");
  await edge.getByLabel("Condition (natural language)").fill("The order was found");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await graph.locator('g.wf-edge.invalid[data-edge-id="lookup_ok"]').waitFor();
  assert.equal(await graph.locator("g.wf-edge.invalid").count(), 1);
  const edgeError = page.locator('.wf-side .field.invalid[data-field^="edges[2]"] .error');
  await edgeError.waitFor();
  assert.match(await page.locator(".wf-side .banner.bad").innerText(), /llm_condition_not_allowed/);
  await t.shot("03-edge-error");

  t.step = "back to the saved document; `resolved` removed: the error is at assess";
  await page.reload();
  await graph.locator("g.wf-node").first().waitFor();
  await graph.getByRole("button", { name: /^Edge resolved/ }).click();
  await page.getByRole("form", { name: "Edge resolved" }).getByRole("button", { name: "Remove edge" }).click();
  assert.equal(await graph.locator("g.wf-edge").count(), 5);
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await graph.locator('g.wf-node.invalid[data-node-id="assess"]').waitFor();
  await page.getByRole("form", { name: "Node assess" }).waitFor();
  assert.match(await page.locator(".wf-side .banner.bad").innerText(), /non_exhaustive_routing/);
  assert.equal(await page.locator(".wf-side .field.invalid").count(), 1, "the error sits at a field of assess");
  await t.shot("04-node-error");
  assert.equal((await readBack(ID)).edges.length, 6, "nothing invalid was stored");

  t.step = "a small workflow made through the forms, then deleted";
  await page.goto(`${BASE}/#/workflows`);
  await page.getByRole("button", { name: "New workflow" }).click();
  await page.getByRole("heading", { name: "New workflow" }).waitFor();
  await page.getByLabel("Name", { exact: true }).fill("Tiny");
  await page.getByRole("button", { name: "Add node" }).click();
  const agent = page.getByRole("form", { name: "Node agent" });
  await agent.getByLabel("Prompt", { exact: true }).fill("Chat, then say bye.");
  await page.getByLabel("Type of the new node").selectOption("end");
  await page.getByRole("button", { name: "Add node" }).click();
  await page.getByRole("form", { name: "Node end" }).getByLabel("Message").fill("Bye!");
  await graph.getByRole("button", { name: /^Node agent/ }).click();
  await agent.getByRole("button", { name: "Add edge from here" }).click();
  const bye = page.getByRole("form", { name: "Edge agent_to_end" });
  await bye.getByLabel("Condition", { exact: true }).selectOption("expression");
  await bye.getByLabel("Expression (boolean)").fill("system__turn_count > 3 or ");
  await bye.getByText(/✗ the expression is incomplete/).waitFor();
  await page.getByRole("button", { name: "Create workflow" }).click();
  await page.locator('.field.invalid[data-field="edges[0].condition.expression"] .error').waitFor();
  await bye.getByLabel("Expression (boolean)").fill("system__turn_count > 3");
  await bye.getByText("✓ valid expression").waitFor();
  await page.getByRole("button", { name: "Create workflow" }).click();
  await page.getByRole("heading", { name: "Workflow Tiny" }).waitFor();
  await graph.locator("g.wf-node").nth(1).waitFor();
  assert.equal(await graph.locator("g.wf-edge").count(), 1);
  const tinyId = decodeURIComponent(page.url().split("/workflows/")[1]);
  const tiny = await readBack(tinyId);
  assert.equal(tiny.startNodeId, "agent");
  assert.deepEqual(tiny.edges[0].condition, { type: "expression", expression: { type: "gt", left: { type: "variable", name: "system__turn_count" }, right: { type: "constant", value: 3 } } });
  assert.deepEqual(tiny.nodes[1], { id: "end", type: "end", message: "Bye!", reason: "workflow_end" });
  await t.shot("05-created");
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete" }).click();
  await page.getByRole("heading", { name: "Workflows" }).waitFor();
  await page.getByRole("link", { name: "Order support" }).waitFor();
  assert.equal(await page.getByRole("link", { name: "Tiny" }).count(), 0);
});
