// Conversation tests in a real browser (R-BX-10): a tool's mock response
// in its editor, the assistant's Tests tab (a test with an error at its
// field, then two saved), "Run all" with its progress and a result per
// test, one run's report with its expectations and the diff against the
// run before, the runs page, and a playground session in test mode.

import assert from "node:assert/strict";
import { scenario } from "./lib.mjs";

await scenario("tests", async (t) => {
  const { page } = t;
  await t.signIn();

  t.step = "the tool's mock response is in its editor";
  await page.getByRole("link", { name: "Tools", exact: true }).click();
  await page.getByRole("link", { name: "lookup_order" }).click();
  assert.equal(await page.getByLabel("Mock response", { exact: true }).inputValue(), "cases");
  assert.equal(await page.getByLabel("When").first().inputValue(), 'order_id == "A1"');
  assert.match(await page.getByLabel("Answer (JSON)").first().inputValue(), /shipped/);
  await t.shot("01-mock");

  t.step = "the Tests tab; a bad expectation is shown at its field";
  await page.getByRole("link", { name: "Assistants", exact: true }).click();
  await page.getByRole("link", { name: "Orders", exact: true }).click();
  await page.getByRole("link", { name: "Tests", exact: true }).click();
  await page.getByRole("heading", { name: "Tests of Orders" }).waitFor();
  await page.getByText("No tests yet.").waitFor();
  await page.getByRole("button", { name: "New test" }).click();
  await page.getByLabel("Name", { exact: true }).fill("shipped order");
  await page.getByLabel("User turn", { exact: true }).first().fill("Where is A1?");
  const finals = page.getByRole("group", { name: "Final variables" });
  await page.getByRole("button", { name: "Add variable check" }).click();
  await finals.getByLabel("Variable").fill("nope");
  await finals.getByLabel("Value").fill("1");
  await page.getByRole("button", { name: "Create test" }).click();
  await t.fieldError("expect.variables.nope").waitFor();
  await finals.getByLabel("Variable").fill("status");
  await finals.getByLabel("Value").fill("shipped");
  await page.getByRole("button", { name: "Add expected tool call" }).click();
  await page.getByLabel("Tool called").fill("lookup_order");
  const call = page.getByRole("group", { name: "Expected call of lookup_order" });
  await call.getByRole("button", { name: "Add argument check" }).click();
  await call.getByLabel("Argument").fill("order_id");
  await call.getByLabel("Value").fill("A1");
  await page.getByLabel("Success criterion").fill("The user learns the order shipped.");
  await page.getByRole("button", { name: "Create test" }).click();
  await page.getByRole("link", { name: "shipped order" }).waitFor();

  t.step = "a second test whose scripted result and criterion make it fail";
  await page.getByRole("button", { name: "New test" }).click();
  await page.getByLabel("Name", { exact: true }).fill("refund");
  await page.getByLabel("User turn", { exact: true }).first().fill("Where is A1?");
  await page.getByRole("button", { name: "Add scripted result" }).click();
  const scripted = page.getByRole("group", { name: "Scripted tool results" });
  await scripted.getByLabel("Tool").fill("lookup_order");
  await scripted.getByLabel("Result or error message").fill('{"status": "lost"}');
  await page.getByRole("button", { name: "Add variable check" }).click();
  await finals.getByLabel("Variable").fill("status");
  await finals.getByLabel("Value").fill("lost");
  await page.getByLabel("Success criterion").fill("A refund is offered.");
  await page.getByRole("button", { name: "Create test" }).click();
  await page.getByRole("link", { name: "refund" }).waitFor();
  await t.shot("02-tests");

  t.step = "run all: the progress bar fills, each test gets its result";
  await page.getByRole("button", { name: "Run all" }).click();
  await page.getByText("1 passed, 1 not passed of 2").waitFor();
  assert.equal(await page.getByRole("progressbar", { name: "Tests run" }).getAttribute("value"), "2");
  await page.locator('tr[data-test="shipped order"] [data-status="passed"]').waitFor();
  await page.locator('tr[data-test="refund"] [data-status="failed"]').waitFor();
  await t.shot("03-run-all");

  t.step = "run one: the report with its expectations and the diff against the run before";
  await page.locator('tr[data-test="refund"]').getByRole("button", { name: "Run" }).click();
  const report = page.getByRole("region", { name: "Test report" });
  await report.getByRole("heading", { name: /refund/ }).waitFor();
  await report.locator('.expectations li[data-passed="false"]', { hasText: "A refund is offered." }).waitFor();
  await report.locator('.expectations li[data-passed="true"]', { hasText: "status" }).waitFor();
  await report.getByText("No change in the transcript since the last run").waitFor();
  assert.match(await report.locator("pre.transcript").innerText(), /lookup_order/);
  await t.shot("04-report");

  t.step = "the runs page lists both runs of the test";
  await page.locator('tr[data-test="refund"]').getByRole("link", { name: "Runs" }).click();
  await page.getByRole("heading", { name: "Runs of refund" }).waitFor();
  assert.equal(await page.getByRole("table", { name: "Runs" }).locator("tr").count(), 2);
  await page.getByRole("button", { name: "Show" }).first().click();
  await page.getByRole("region", { name: "Test report" }).locator("pre.transcript").waitFor();

  t.step = "a playground session in test mode answers from the mock";
  await t.startSession("Orders", async () => {
    await page.getByLabel(/Test mode/).check();
  });
  await page.getByText("test mode", { exact: true }).waitFor();
  await t.say("Where is A1?");
  await t.reply("Order A1").waitFor();
  assert.match(await t.reply("Order A1").innerText(), /shipped/);
  await t.shot("05-playground");
});
