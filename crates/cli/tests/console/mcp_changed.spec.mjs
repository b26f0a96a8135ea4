// A pinned MCP tool whose server changed its parameters: the tool page
// says what changed and re-accepts the new schema with one click (R-BX-7).

import assert from "node:assert/strict";
import { BASE, scenario } from "./lib.mjs";

const TOOL_ID = process.env.TOOL_ID;

await scenario("mcp_changed", async (t) => {
  const { page } = t;
  await t.signIn();

  t.step = "the tool page names the change";
  await page.goto(`${BASE}/#/tools/${TOOL_ID}`);
  const notice = page.getByRole("alert").filter({ hasText: "changed this tool's parameters" });
  await notice.waitFor();
  assert.match(await notice.innerText(), /parameter `units` added \(required\)/);
  await t.shot("01-schema-changed");

  t.step = "Re-accept pins the server's schema";
  await notice.getByRole("button", { name: "Re-accept" }).click();
  await page.getByRole("heading", { name: "Tool weather" }).waitFor();
  await page.getByText("changed this tool's parameters").waitFor({ state: "detached" });
  await page.getByRole("group", { name: "Parameters view" }).getByRole("button", { name: "JSON" }).click();
  assert.match(await page.getByLabel("Parameters (JSON Schema)").inputValue(), /units/);
  await t.shot("02-reaccepted");
});
