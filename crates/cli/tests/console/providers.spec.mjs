// Model providers in a real browser: the list (credentials masked, a
// provider without its key marked not ready with what to set), a check
// that answers with its latency, and the playground's warning when the
// chosen assistant's provider cannot work.

import assert from "node:assert/strict";
import { scenario } from "./lib.mjs";

await scenario("providers", async (t) => {
  const { page } = t;
  await t.signIn();

  t.step = "the providers page lists them, masked";
  await page.getByRole("link", { name: "Providers", exact: true }).click();
  await page.getByRole("heading", { name: "Model providers" }).waitFor();
  const table = page.getByRole("table", { name: "Providers" });
  assert.doesNotMatch(await table.innerText(), /sk-openai-less|pw-secret/);
  await page.locator('tr[data-provider="nokey"]').getByText("not ready").waitFor();
  await page.locator('tr[data-provider="nokey"]').getByText(/api_key/).waitFor();

  t.step = "a check of the default provider answers with its latency";
  await page.locator('tr[data-provider="default"]').getByRole("button", { name: "Check" }).click();
  await page.locator('tr[data-provider="default"]').getByText(/answers · \d+ ms/).waitFor();
  await t.shot("01-providers");

  t.step = "the playground warns when the assistant's provider cannot work";
  await page.getByRole("link", { name: "Playground", exact: true }).click();
  await page.getByRole("combobox", { name: "Assistant" }).selectOption({ label: "On nokey" });
  await page.getByRole("alert").filter({ hasText: "No usable model provider (nokey)" }).waitFor();
  await page.getByRole("combobox", { name: "Assistant" }).selectOption({ label: "On default" });
  await page.getByRole("alert").filter({ hasText: "No usable model provider" }).waitFor({ state: "detached" });
  await t.shot("02-playground");
});
