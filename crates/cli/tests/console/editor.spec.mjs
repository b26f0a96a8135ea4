// The editor side of the console in a real browser: sign-in, a tool and
// assistants made through the forms (a validation error shown at its
// field), a compatibility problem cleaned up, a playground chat with a tool
// card, the todo list and an askUser question answered with chips, the
// sessions list, and a narrow screen.

import assert from "node:assert/strict";
import { scenario, BASE, KEY } from "./lib.mjs";

await scenario("editor", async (t) => {
  const { page } = t;
  t.step = "sign in with a wrong key, then the right one";
  await page.goto(`${BASE}/`);
  await page.getByLabel("Workspace API key").fill("rtc_ws_wrong");
  await page.getByRole("button", { name: "Sign in" }).click();
  await t.fieldError("key").waitFor();
  await t.shot("01-sign-in-error");
  await page.getByLabel("Workspace API key").fill(KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Assistants" }).waitFor();

  t.step = "create an HTTP tool; a bad name is shown at its field";
  await page.getByRole("link", { name: "Tools", exact: true }).click();
  await page.getByRole("button", { name: "New tool" }).click();
  await page.getByLabel("Name", { exact: true }).fill("check health");
  await page.getByLabel("Description").fill("Checks whether the service is up.");
  await page.getByRole("group", { name: "Parameters view" }).getByRole("button", { name: "JSON" }).click();
  await page.getByLabel("Parameters (JSON Schema)").fill('{"type": "object", "properties": {}}');
  await page.getByLabel("URL").fill(`${BASE}/healthz`);
  await page.getByRole("button", { name: "Create tool" }).click();
  await t.fieldError("name").waitFor();
  assert.match(await t.fieldError("name").innerText(), /name/i);
  assert.equal(await page.getByLabel("Name", { exact: true }).getAttribute("aria-invalid"), "true");
  await t.shot("02-tool-validation-error");
  await page.getByLabel("Name", { exact: true }).fill("check_health");
  await page.getByRole("button", { name: "Create tool" }).click();
  await page.getByRole("heading", { name: "Tool check_health" }).waitFor();
  await t.shot("03-tool-saved");

  t.step = "create the Support assistant with askUser, todo and the tool bound";
  await page.getByRole("link", { name: "Assistants", exact: true }).click();
  await page.getByRole("button", { name: "New assistant" }).click();
  await page.getByLabel("Name", { exact: true }).fill("Support");
  await page.getByLabel("System prompt").fill("You check services for {{customer}}.");
  await page.getByRole("button", { name: "Add variable" }).click();
  await page.getByLabel("Name", { exact: true }).nth(1).fill("customer");
  await page.getByLabel("Default").fill('"Acme"');
  await page.getByLabel("Ask the user (askUser)").check();
  await page.getByLabel("Todo list (todoWrite)").check();
  await page.getByRole("button", { name: "Bind a tool" }).click();
  await page.getByLabel("Tool", { exact: true }).selectOption({ label: "check_health (http)" });
  await page.getByRole("button", { name: "Create assistant" }).click();
  await page.getByRole("heading", { name: "Assistant Support" }).waitFor();
  await t.shot("04-assistant-editor");

  t.step = "a realtime interface and a realtime assistant using the HTTP tool";
  await page.getByRole("link", { name: "Realtime", exact: true }).click();
  await page.getByRole("button", { name: "New interface" }).click();
  await page.getByLabel("Id (optional)").fill("acme-rt");
  await page.getByLabel("Name", { exact: true }).fill("Acme Realtime");
  await page.getByLabel("Provider").fill("acme");
  await page.getByLabel("http", { exact: true }).check();
  await page.getByLabel("endConversation", { exact: true }).check();
  await page.getByRole("button", { name: "Create" }).click();
  await page.getByRole("heading", { name: "Realtime interface Acme Realtime" }).waitFor();
  await page.getByRole("link", { name: "Assistants", exact: true }).click();
  await page.getByRole("button", { name: "New assistant" }).click();
  await page.getByLabel("Name", { exact: true }).fill("Voice");
  await page.getByLabel("System prompt").fill("Speak briefly.");
  await page.getByLabel("Run mode").selectOption("realtime");
  await page.getByLabel("Realtime interface").selectOption("acme-rt");
  await page.getByRole("button", { name: "Bind a tool" }).click();
  await page.getByLabel("Tool", { exact: true }).selectOption({ label: "check_health (http)" });
  await page.getByRole("button", { name: "Create assistant" }).click();
  await page.getByRole("heading", { name: "Assistant Voice" }).waitFor();
  const voiceUrl = page.url();

  t.step = "the interface drops HTTP tools: the assistant shows the problem and cleans it up";
  await page.goto(`${BASE}/#/realtime/acme-rt`);
  await page.getByLabel("http", { exact: true }).uncheck();
  await Promise.all([
    page.waitForResponse((r) => r.url().endsWith("/v1/realtime-interfaces/acme-rt") && r.request().method() === "PUT" && r.ok()),
    page.getByRole("button", { name: "Save" }).click(),
  ]);
  await page.goto(voiceUrl);
  const report = page.getByRole("region", { name: "Compatibility" });
  await report.waitFor();
  assert.match(await report.innerText(), /toolBindings\[0\]/);
  assert.equal(await page.locator('.binding.incompatible[data-path="toolBindings[0]"]').count(), 1, "marked in place");
  await t.shot("05-compatibility-problem");
  await page.getByRole("button", { name: /Clean up 1 incompatible item/ }).click();
  await page.getByText("Removed 1 incompatible item(s)").waitFor();
  await report.waitFor({ state: "detached" });
  assert.equal(await page.locator(".binding").count(), 0, "the binding was removed by the cleanup");
  await t.shot("06-compatibility-cleaned");

  t.step = "playground: chat, tool card, todo list, askUser chips";
  await page.getByRole("link", { name: "Playground", exact: true }).click();
  await page.getByRole("heading", { name: "Playground", exact: true }).waitFor();
  await page.getByRole("combobox", { name: "Assistant" }).selectOption({ label: "Support" });
  await page.getByLabel("customer (string)").fill("Globex");
  await page.getByRole("button", { name: "Start session" }).click();
  await page.getByText("connected").waitFor();
  await page.getByLabel("Message", { exact: true }).fill("check the service");
  await page.getByRole("button", { name: "Send", exact: true }).click();
  const card = page.locator(".toolcard", { hasText: "check_health" });
  await card.locator(".result pre").waitFor();
  assert.match(await card.innerText(), /ok|status/i, "the tool's result is on its card");
  await page.locator('.todo li[data-status="in_progress"]', { hasText: "Checking the service" }).waitFor();
  const q = page.getByRole("group", { name: "Question from the assistant" });
  await q.waitFor();
  await t.shot("07-playground-question");
  await q.getByRole("button", { name: "2. Detailed" }).click();
  await q.getByRole("button", { name: "Answer" }).click();
  await page.locator(".msg.assistant", { hasText: "The service is healthy." }).waitFor();
  await page.locator('.todo li[data-status="completed"]').nth(1).waitFor();
  assert.equal(await page.locator(".question").count(), 0, "the answered question is gone");
  const vars = await page.getByRole("region", { name: "Variables" }).innerText();
  assert.match(vars, /Globex/);
  await t.shot("08-playground-done");

  t.step = "the session in the sessions list, with transcript and event log";
  await page.getByRole("link", { name: "Sessions", exact: true }).click();
  await page.locator("tbody tr").first().getByRole("link").first().click();
  await page.getByRole("table", { name: "Event log" }).waitFor();
  assert.match(await page.locator("main").innerText(), /ask_user\.answered/);
  await t.shot("09-session-detail");

  t.step = "narrow screen";
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole("link", { name: "Playground", exact: true }).click();
  await page.getByRole("button", { name: "Start session" }).waitFor();
  await t.shot("10-narrow-playground");
});
