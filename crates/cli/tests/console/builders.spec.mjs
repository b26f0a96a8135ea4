// The console's form builders in a real browser (issue 39): a tool's
// parameters built through the form (a nested object, allowed values,
// required ones, a list), an error at the field it names, the JSON view
// both ways and a schema the form cannot show, the mock response by case,
// saved and shown again after a reload; a conversation test's
// expectations built through the form (a bad variable named at its row),
// kept across the JSON view, and run; the playground's multi-line input;
// a live and a test-mode session saved as tests from their transcripts.

import assert from "node:assert/strict";
import { scenario, BASE } from "./lib.mjs";

const EXPECTED_SCHEMA = {
  type: "object",
  properties: {
    title: { type: "string", description: "Short summary" },
    priority: { type: "string", enum: ["low", "normal", "high"] },
    customer: {
      type: "object",
      properties: { email: { type: "string" }, age: { type: "integer" } },
      required: ["email"],
    },
    tags: { type: "array", items: { type: "string" } },
  },
  required: ["title", "customer"],
};

await scenario("builders", async (t) => {
  const { page } = t;
  await t.signIn();
  const param = (name) => page.getByRole("group", { name: `Parameter ${name}`, exact: true });
  const addParam = async (name, type) => {
    await page.getByRole("button", { name: "Add parameter" }).click();
    await page.getByLabel("Parameter name").last().fill(name);
    if (type) await param(name).getByLabel("Parameter type").selectOption(type);
  };

  t.step = "a tool's parameters built through the form";
  await page.getByRole("link", { name: "Tools", exact: true }).click();
  await page.getByRole("button", { name: "New tool" }).click();
  await page.getByLabel("Name", { exact: true }).fill("create_ticket");
  await page.getByLabel("Description", { exact: true }).fill("Opens a support ticket.");
  await page.getByLabel("URL").fill(`${BASE}/healthz`);
  await addParam("title");
  await param("title").getByLabel("Parameter description").fill("Short summary");
  await param("title").getByLabel("Required").check();
  await addParam("priority");
  await param("priority").getByLabel("Allowed values").fill("low, normal, high");
  await addParam("customer", "object");
  await param("customer").getByLabel("Required").first().check();
  const customer = param("customer");
  await customer.getByRole("button", { name: "Add property" }).click();
  await customer.getByLabel("Property name").last().fill("email");
  await page.getByRole("group", { name: "Property email" }).getByLabel("Required").check();
  await customer.getByRole("button", { name: "Add property" }).click();
  await customer.getByLabel("Property name").last().fill("age");
  await page.getByRole("group", { name: "Property age" }).getByLabel("Property type").selectOption("integer");
  await page.getByRole("group", { name: "Property age" }).getByLabel("Allowed values").fill("18, adult");
  await addParam("tags", "array");
  assert.equal(await param("tags").getByLabel("Item type").inputValue(), "string");
  await t.shot("01-parameters-form");

  t.step = "an allowed value that is not an integer is shown at its field";
  await page.getByRole("button", { name: "Create tool" }).click();
  const ageError = t.fieldError("parameters.properties.customer.properties.age.enum");
  await ageError.waitFor();
  assert.match(await ageError.innerText(), /`adult` is not an integer/);
  await page.getByRole("group", { name: "Property age" }).getByLabel("Allowed values").fill("");

  t.step = "the JSON view shows the schema; an edit there comes back as a row";
  const view = page.getByRole("group", { name: "Parameters view" });
  await view.getByRole("button", { name: "JSON" }).click();
  const schemaJson = page.getByLabel("Parameters (JSON Schema)");
  assert.deepEqual(JSON.parse(await schemaJson.inputValue()), EXPECTED_SCHEMA);
  const withCount = structuredClone(EXPECTED_SCHEMA);
  withCount.properties.count = { type: "integer", enum: [1, 2, 3], minimum: 1 };
  await schemaJson.fill(JSON.stringify(withCount));
  await view.getByRole("button", { name: "Form" }).click();
  assert.equal(await param("count").getByLabel("Allowed values").inputValue(), "1, 2, 3");
  await param("count").getByText("Also kept: minimum").waitFor();

  t.step = "a schema the form cannot show stays in the JSON view with a note";
  await view.getByRole("button", { name: "JSON" }).click();
  await schemaJson.fill('{"type": "object", "properties": {"id": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}');
  await view.getByRole("button", { name: "Form" }).click();
  await page.getByText("The form cannot show this schema: `id` uses `anyOf`").waitFor();
  assert.equal(await view.getByRole("button", { name: "JSON" }).getAttribute("aria-pressed"), "true");
  await t.shot("02-parameters-json-note");
  await schemaJson.fill(JSON.stringify(withCount));
  await view.getByRole("button", { name: "Form" }).click();
  await page.getByRole("button", { name: "Remove parameter count" }).click();
  assert.equal(await param("count").count(), 0);

  t.step = "the mock response by case: a JSON error shown as it is typed";
  await page.getByLabel("Mock response", { exact: true }).selectOption("cases");
  await page.getByLabel("When").first().fill('priority == "high"');
  await page.getByText("✓ valid expression").waitFor();
  await page.getByLabel("Answer (JSON)").first().fill('{"queue": "urgent"');
  await page.getByText("✗ not valid JSON").waitFor();
  await page.getByLabel("Answer (JSON)").first().fill('{"queue": "urgent"}');
  await page.getByRole("button", { name: "Add case" }).click();
  await page.getByLabel("Answer (JSON)").last().fill('{"queue": "normal"}');
  await t.shot("03-mock-cases");
  await page.getByRole("button", { name: "Create tool" }).click();
  await page.getByRole("heading", { name: "Tool create_ticket" }).waitFor();

  t.step = "reloaded, the parameters and the cases come back in the form";
  await page.reload();
  await page.getByRole("heading", { name: "Tool create_ticket" }).waitFor();
  assert.equal(await param("title").getByLabel("Parameter description").inputValue(), "Short summary");
  assert.equal(await param("title").getByLabel("Required").isChecked(), true);
  assert.equal(await param("priority").getByLabel("Required").isChecked(), false);
  assert.equal(await param("priority").getByLabel("Allowed values").inputValue(), "low, normal, high");
  assert.equal(await param("customer").getByLabel("Parameter type").inputValue(), "object");
  assert.equal(await page.getByRole("group", { name: "Property email" }).getByLabel("Required").isChecked(), true);
  assert.equal(await page.getByRole("group", { name: "Property age" }).getByLabel("Property type").inputValue(), "integer");
  assert.equal(await param("tags").getByLabel("Item type").inputValue(), "string");
  assert.equal(await page.getByLabel("Mock response", { exact: true }).inputValue(), "cases");
  assert.equal(await page.getByLabel("When").first().inputValue(), 'priority == "high"');
  await t.shot("04-tool-reloaded");
  // What the API holds, asked from the page with its key.
  const saved = await page.evaluate(async () => {
    const r = await fetch("/v1/tools", { headers: { Authorization: `Bearer ${sessionStorage.getItem("rtc.workspaceKey")}` } });
    return (await r.json()).data.find((x) => x.name === "create_ticket");
  });
  assert.deepEqual(saved.parameters, EXPECTED_SCHEMA);
  assert.deepEqual(saved.mockResponse[1], { response: { queue: "normal" } });

  t.step = "a test's expectations built through the form";
  await page.getByRole("link", { name: "Assistants", exact: true }).click();
  await page.getByRole("link", { name: "Orders", exact: true }).click();
  await page.getByRole("link", { name: "Tests", exact: true }).click();
  await page.getByRole("button", { name: "New test" }).click();
  await page.getByLabel("Name", { exact: true }).fill("built with the form");
  await page.getByLabel("User turn", { exact: true }).first().fill("Where is A1?");
  await page.getByRole("button", { name: "Add expected tool call" }).click();
  await page.getByLabel("Tool called").last().fill("lookup_order");
  const lookup = page.getByRole("group", { name: "Expected call of lookup_order" });
  await lookup.getByRole("button", { name: "Add argument check" }).click();
  await lookup.getByLabel("Argument").fill("order_id");
  await lookup.getByLabel("Value").fill("A1");
  await lookup.getByLabel("At most (calls)").fill("1");
  await page.getByRole("button", { name: "Add expected tool call" }).click();
  await page.getByLabel("Tool called").last().fill("requestHumanHandoff");
  const handoff = page.getByRole("group", { name: "Expected call of requestHumanHandoff" });
  await handoff.getByLabel("At least (calls)").fill("0");
  await handoff.getByLabel("At most (calls)").fill("0");
  const finals = page.getByRole("group", { name: "Final variables" });
  await page.getByRole("button", { name: "Add variable check" }).click();
  await finals.getByLabel("Variable").fill("nope");
  await finals.getByLabel("Check").selectOption("$oneOf");
  await finals.getByLabel("Value").fill("shipped, delivered");
  await page.getByLabel("End reason").selectOption("absent");
  await page.getByLabel("Success criterion").fill("The user learns the order shipped.");
  await page.getByRole("button", { name: "Create test" }).click();
  await t.fieldError("expect.variables.nope").waitFor();
  assert.match(await t.fieldError("expect.variables.nope").innerText(), /not a declared dynamic variable/);
  await finals.getByLabel("Variable").fill("status");
  await t.shot("05-test-form");

  t.step = "the JSON view of the test keeps what the form holds, both ways";
  const testView = page.getByRole("group", { name: "Test view" });
  await testView.getByRole("button", { name: "JSON" }).click();
  const asJson = JSON.parse(await page.getByLabel("Test (JSON)").inputValue());
  assert.deepEqual(asJson.expect.variables, { status: { $oneOf: ["shipped", "delivered"] } });
  assert.deepEqual(asJson.expect.toolCalls[0], { name: "lookup_order", minCalls: 1, maxCalls: 1, arguments: { order_id: "A1" } });
  assert.deepEqual(asJson.expect.endReason, { $exists: false });
  await testView.getByRole("button", { name: "Form" }).click();
  assert.equal(await finals.getByLabel("Value").inputValue(), "shipped, delivered");
  assert.equal(await lookup.getByLabel("Value").inputValue(), "A1");
  await page.getByRole("button", { name: "Create test" }).click();

  t.step = "the test built through the form runs and passes";
  const built = page.locator('tr[data-test="built with the form"]');
  await built.waitFor();
  await built.getByRole("button", { name: "Run" }).click();
  await built.locator('[data-status="passed"]').waitFor({ timeout: 30000 });
  await t.shot("06-test-passed");

  t.step = "the playground's input takes several lines: Shift+Enter, then Enter sends";
  const live = await t.startSession("Orders");
  const message = page.getByLabel("Message", { exact: true });
  await message.fill("Where is A1?");
  await message.press("Shift+Enter");
  await message.pressSequentially("It was ordered Monday.");
  assert.equal(await message.inputValue(), "Where is A1?\nIt was ordered Monday.");
  await message.press("Enter");
  await t.reply("Order A1").waitFor();
  assert.equal(await message.inputValue(), "");

  t.step = "a live session saved as a test: turns, real results scripted, calls expected";
  await page.goto(`${BASE}/#/sessions/${encodeURIComponent(live)}`);
  await page.getByRole("button", { name: "Save as test" }).waitFor();
  await t.shot("07-session");
  await page.getByRole("button", { name: "Save as test" }).click();
  await page.getByRole("heading", { name: "New test from a session" }).waitFor();
  await page.getByText("1 user turn(s), 1 expected tool call(s) from what happened, 1 tool result(s) scripted").waitFor();
  assert.equal(await page.getByLabel("User turn", { exact: true }).first().inputValue(), "Where is A1?\nIt was ordered Monday.");
  const scripted = page.getByRole("group", { name: "Scripted tool results" });
  assert.equal(await scripted.getByLabel("Tool").inputValue(), "lookup_order");
  assert.deepEqual(JSON.parse(await scripted.getByLabel("Result or error message").inputValue()), { status: "real" });
  assert.equal(await page.getByRole("group", { name: "Expected call of lookup_order" }).getByLabel("Value").inputValue(), "A1");
  await t.shot("08-live-session-draft");
  await page.getByLabel("Name", { exact: true }).fill("replay of a live session");
  await page.getByRole("button", { name: "Add variable check" }).click();
  await finals.getByLabel("Variable").fill("status");
  await finals.getByLabel("Value").fill("real");
  await page.getByRole("button", { name: "Create test" }).click();
  const replay = page.locator('tr[data-test="replay of a live session"]');
  await replay.waitFor();
  await replay.getByRole("button", { name: "Run" }).click();
  await replay.locator('[data-status="passed"]').waitFor({ timeout: 30000 });

  t.step = "a test-mode session saved as a test: nothing scripted, the mock answers";
  const mocked = await t.startSession("Orders", async () => {
    await page.getByLabel(/Test mode/).check();
  });
  await t.say("Where is A1?");
  await t.reply("Order A1").waitFor();
  await page.goto(`${BASE}/#/sessions/${encodeURIComponent(mocked)}`);
  await page.getByRole("button", { name: "Save as test" }).click();
  await page.getByText("its tools answered their mock responses").waitFor();
  assert.equal(await page.getByRole("group", { name: "Scripted tool results" }).getByLabel("Tool").count(), 0);
  await page.getByLabel("Name", { exact: true }).fill("replay of a test-mode session");
  await page.getByRole("button", { name: "Create test" }).click();
  await page.locator('tr[data-test="replay of a test-mode session"]').waitFor();
  await t.shot("09-tests");
});
