// The admin's first run in a real browser: sign in with the admin token,
// create a workspace (its key shown once), rotate the key (the new one
// shown once), open the workspace and make an assistant in it, then sign
// in with the workspace's new key and find it; the old key is refused.

import assert from "node:assert/strict";
import { scenario, BASE } from "./lib.mjs";

const ADMIN = process.env.ADMIN_TOKEN;

await scenario("admin", async (t) => {
  const { page } = t;
  page.on("dialog", (d) => d.accept());

  t.step = "the admin token opens the workspaces";
  await page.goto(`${BASE}/`);
  await page.getByLabel("Workspace API key or admin token").fill(ADMIN);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Workspaces" }).waitFor();
  await page.getByText("Admin ·").waitFor();

  t.step = "a new workspace, its key shown once";
  await page.getByLabel("Name", { exact: true }).fill("Browser Co");
  await page.getByRole("button", { name: "Create workspace" }).click();
  const firstKey = await page.getByLabel("API key of Browser Co").inputValue();
  assert.match(firstKey, /^rtc_ws_/);
  await page.locator('tr[data-workspace="Browser Co"]').waitFor();
  await t.shot("01-created");

  t.step = "its key rotated: a different key, shown once";
  await page.locator('tr[data-workspace="Browser Co"]').getByRole("button", { name: "Rotate key" }).click();
  await page.getByText("New key for Browser Co").waitFor();
  const newKey = await page.getByLabel("API key of Browser Co").inputValue();
  assert.match(newKey, /^rtc_ws_/);
  assert.notEqual(newKey, firstKey);

  t.step = "opened, the workspace is managed as with its key";
  await page.locator('tr[data-workspace="Browser Co"]').getByRole("button", { name: "Open" }).click();
  await page.getByRole("heading", { name: "Assistants" }).waitFor();
  await page.getByText("Admin in Browser Co").waitFor();
  await page.getByRole("button", { name: "New assistant" }).click();
  await page.getByLabel("Name", { exact: true }).fill("Made by the admin");
  await page.getByRole("button", { name: "Create assistant" }).click();
  await page.getByRole("heading", { name: "Assistant Made by the admin" }).waitFor();
  await t.shot("02-opened");

  t.step = "the new key signs in to that workspace; the old one is refused";
  await page.getByRole("link", { name: "all workspaces" }).click();
  await page.getByRole("heading", { name: "Workspaces" }).waitFor();
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("Workspace API key or admin token").fill(firstKey);
  await page.getByRole("button", { name: "Sign in" }).click();
  await t.fieldError("key").waitFor();
  await page.getByLabel("Workspace API key or admin token").fill(newKey);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("link", { name: "Made by the admin" }).waitFor();
  assert.equal(await page.locator("#scope").isHidden(), true);
});
