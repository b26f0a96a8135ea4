// A tool tried before an assistant uses it, in a real browser: the Test
// panel of a saved HTTP tool runs it with sample arguments prefilled from
// its parameters (✓ and the answer; bad arguments at their box), a tool
// on a private address the server does not allow saves with a warning
// that stays on the page (at its URL, naming RTC_OUTBOUND_ALLOW) and its
// test fails with the guard's refusal; a client tool has no Test.

import assert from "node:assert/strict";
import { scenario } from "./lib.mjs";

const REFUSED = process.env.REFUSED_URL;

await scenario("first-hour-tools", async (t) => {
  const { page } = t;
  await page.setViewportSize({ width: 1440, height: 900 });
  await t.signIn();

  t.step = "14. a saved HTTP tool tested with sample arguments";
  await page.getByRole("link", { name: "Tools", exact: true }).click();
  await page.getByRole("link", { name: "lookup_order" }).click();
  await page.getByRole("heading", { name: "Tool lookup_order" }).waitFor();
  const panel = page.getByRole("region", { name: "Test the tool" });
  const args = panel.getByLabel("Sample arguments (JSON)");
  assert.deepEqual(JSON.parse(await args.inputValue()), { order_id: "" }, "prefilled from the parameters' schema");
  await args.fill('{"order_id": "A1"}');
  await panel.getByRole("button", { name: "Test", exact: true }).click();
  await panel.getByText("✓ answered").waitFor();
  assert.match(await panel.getByLabel("Result").innerText(), /"status": "shipped"/);
  await t.shot("01-tested");

  t.step = "14. arguments the parameters refuse: the error at the arguments";
  await args.fill('{"order_id": 5}');
  await panel.getByRole("button", { name: "Test", exact: true }).click();
  await panel.locator('.field.invalid[data-field="arguments"] .error').waitFor();

  t.step = "14. an unsaved change: the test says it runs the saved tool";
  await page.locator('.field[data-field="description"] textarea').fill("Looks an order up.");
  await panel.getByText("The test runs the tool as saved").waitFor();

  t.step = "14. a tool on an address the server refuses: saved, with a warning that stays";
  await page.getByRole("link", { name: "Tools", exact: true }).click();
  await page.getByRole("button", { name: "New tool" }).click();
  await page.getByRole("heading", { name: "New tool" }).waitFor();
  await page.locator('.field[data-field="name"] input').fill("refused_ping");
  await page.locator('.field[data-field="http.url"] input').fill(`${REFUSED}/orders/x`);
  await page.getByRole("button", { name: "Create tool" }).click();
  await page.getByRole("heading", { name: "Tool refused_ping" }).waitFor();
  const warned = page.getByRole("alert", { name: "Saved with warnings" });
  await warned.waitFor();
  assert.match(await warned.innerText(), /http\.url[\s\S]*RTC_OUTBOUND_ALLOW/);
  await page.locator('.field[data-field="http.url"] .save-warning').waitFor();
  await page.waitForTimeout(4000);
  assert.equal(await warned.isVisible(), true, "still there once the toast is gone");
  await t.shot("02-warned");

  t.step = "14. saved again: warned again; its test fails with the guard's refusal";
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByRole("alert", { name: "Saved with warnings" }).waitFor();
  const refusedPanel = page.getByRole("region", { name: "Test the tool" });
  await refusedPanel.getByRole("button", { name: "Test", exact: true }).click();
  await refusedPanel.getByText("✗ failed").waitFor();
  assert.match(await refusedPanel.getByLabel("Error").innerText(), /RTC_OUTBOUND_ALLOW/);
  await page.getByRole("button", { name: "Dismiss" }).click();
  assert.equal(await page.getByRole("alert", { name: "Saved with warnings" }).count(), 0);
  await t.shot("03-refused");

  t.step = "14. a client tool runs in the host's app: no Test";
  await page.getByRole("link", { name: "Tools", exact: true }).click();
  await page.getByRole("link", { name: "show_map" }).click();
  await page.getByRole("heading", { name: "Tool show_map" }).waitFor();
  assert.equal(await page.getByRole("region", { name: "Test the tool" }).count(), 0);
});
