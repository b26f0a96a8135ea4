// The playground on a workflow in a real browser: a session started on the
// §5 workflow shows its graph with greet current (its first message said);
// the user gives the order number, the stage records it, and the graph
// follows the walk — lookup_order, assess, wrap_up — with the edges taken
// marked and the end message said.

import assert from "node:assert/strict";
import { scenario } from "./lib.mjs";

await scenario("workflow-live", async (t) => {
  const { page } = t;
  await t.signIn();

  t.step = "start a session on the workflow: the graph shows greet as the current node";
  await page.getByRole("link", { name: "Playground", exact: true }).click();
  await page.getByRole("heading", { name: "Playground", exact: true }).waitFor();
  await page.getByLabel("Start the session on").selectOption("workflow");
  await page.getByRole("combobox", { name: "Workflow" }).selectOption({ label: "Order support" });
  await page.getByRole("button", { name: "Start session" }).click();
  await page.getByText("connected").waitFor();
  const live = page.getByRole("region", { name: "Workflow", exact: true });
  const graph = live.getByRole("group", { name: "Workflow graph (live)" });
  await graph.locator('g.wf-node.current[data-node-id="greet"]').waitFor();
  assert.equal(await graph.locator("g.wf-node").count(), 5);
  assert.equal(await graph.locator("g.wf-edge").count(), 6);
  await t.reply("Hi, Acme support. Your order number?").waitFor();
  assert.match(await live.getByRole("status", { name: "Current node" }).innerText(), /greet/);
  await t.shot("01-at-greet");

  t.step = "the order number given: the current node moves along the walk to wrap_up";
  await t.say("My order is A-1");
  await graph.locator('g.wf-node.current[data-node-id="wrap_up"]').waitFor();
  await t.reply("Order A-1 is shipped. Bye!").waitFor();
  assert.equal(await graph.locator("g.wf-node.current").count(), 1, "one current node");
  const taken = await graph.locator("g.wf-edge.taken").evaluateAll((els) => els.map((e) => e.dataset.edgeId));
  assert.deepEqual(taken.sort(), ["got_id", "lookup_ok", "resolved"]);
  const visited = await graph.locator("g.wf-node.visited").evaluateAll((els) => els.map((e) => e.dataset.nodeId));
  assert.deepEqual(visited, ["greet", "lookup_order", "assess", "wrap_up"]);
  await page.locator(".sysline", { hasText: "entered lookup_order (action) via got_id" }).waitFor();
  await page.getByText("ended", { exact: true }).waitFor();
  await t.shot("02-at-wrap-up");
});
