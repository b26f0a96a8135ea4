// Task backends in a real browser: a reasoner backend and an OpenCode
// backend made through the forms (a bad value shown at its field each
// time, a started server refused to a workspace key at its command; the
// reasoner offers only HTTP and MCP tools), an assistant given
// the reasoner (not while realtime), and a playground conversation whose
// model delegates a task: the delegate_task tool card, the Tasks panel
// with the task running then completed with its result, the report's
// answer, the task opened with the reasoner's transcript, and a second
// task cancelled from the panel; the session page lists both.

import assert from "node:assert/strict";
import { scenario } from "./lib.mjs";

await scenario("tasks", async (t) => {
  const { page } = t;
  await t.signIn();

  t.step = "a reasoner backend: only HTTP and MCP tools are offered";
  await page.getByRole("link", { name: "Task backends", exact: true }).click();
  await page.getByRole("heading", { name: "Task backends" }).waitFor();
  await page.getByText("No task backends yet.").waitFor();
  await page.getByRole("button", { name: "New task backend" }).click();
  await page.getByRole("heading", { name: "New task backend" }).waitFor();
  await page.getByLabel("Name", { exact: true }).fill("Research");
  assert.equal(await page.getByLabel("Type", { exact: true }).inputValue(), "reasoner");
  // A model the provider does not name is typed by hand.
  await page.getByLabel("Model", { exact: true }).selectOption({ label: "another model…" });
  await page.getByLabel("Model name").fill("reasoner-model");
  await page.getByLabel("System prompt").fill("You research orders.");
  await page.getByRole("button", { name: "Bind a tool" }).click();
  const offered = await page.getByLabel("Tool", { exact: true }).locator("option").allInnerTexts();
  assert.ok(offered.includes("query_order (http)"), `the HTTP tool is offered: ${offered}`);
  assert.ok(!offered.some((o) => o.includes("show_map")), `a client tool is not offered: ${offered}`);
  await page.getByLabel("Tool", { exact: true }).selectOption({ label: "query_order (http)" });
  await page.getByLabel("Source of tenant").selectOption("literal");
  await page.getByLabel("Literal value for tenant").fill('"acme"');
  assert.equal(await page.getByText("Copy into variables").count(), 0, "no result assignments for a task");

  t.step = "too many steps is shown at the steps field";
  await page.getByLabel("Most model calls per task").fill("500");
  await page.getByRole("button", { name: "Create task backend" }).click();
  await t.fieldError("reasoner.maxSteps").waitFor();
  assert.match(await t.fieldError("reasoner.maxSteps").innerText(), /between 1 and 200/);
  assert.equal(await page.getByLabel("Most model calls per task").getAttribute("aria-invalid"), "true");
  await t.shot("01-reasoner-error");
  await page.getByLabel("Most model calls per task").fill("5");
  await page.getByRole("button", { name: "Create task backend" }).click();
  await page.getByRole("heading", { name: "Task backend Research" }).waitFor();
  assert.equal(await page.getByLabel("Source of tenant").inputValue(), "literal", "the saved binding is shown");
  await t.shot("02-reasoner-saved");

  t.step = "an OpenCode backend on an operator-run server; a relative directory is shown at its field";
  await page.getByRole("link", { name: "Task backends", exact: true }).click();
  await page.getByRole("button", { name: "New task backend" }).click();
  await page.getByRole("heading", { name: "New task backend" }).waitFor();
  await page.getByLabel("Name", { exact: true }).fill("Coder");
  await page.getByLabel("Type", { exact: true }).selectOption("opencode");
  await page.getByLabel("Provider id").fill("mock");
  await page.getByLabel("Model id").fill("tools-0");
  // A server rtc-agent starts needs the admin token: the form says so, and
  // the workspace key's refusal is shown at the command.
  await page.getByLabel("OpenCode server").selectOption("started");
  await page.getByText("Only the admin token may save a backend that starts a server").waitFor();
  await page.getByLabel("Command").fill("opencode");
  await page.getByLabel("Configuration (JSON)").fill('{"autoupdate": false}');
  await page.getByRole("button", { name: "Create task backend" }).click();
  await t.fieldError("opencode.command").waitFor();
  assert.match(await t.fieldError("opencode.command").innerText(), /admin token/);
  await page.getByLabel("OpenCode server").selectOption("server");
  await page.getByLabel("Base URL").fill("http://127.0.0.1:4096");
  await page.getByLabel("Password").selectOption("{{secret__opencode_pw}}");
  await page.getByLabel("Directory").fill("work");
  await page.getByLabel("Time limit per task (s)").fill("1800");
  await page.getByRole("button", { name: "Create task backend" }).click();
  await t.fieldError("opencode.directory").waitFor();
  assert.match(await t.fieldError("opencode.directory").innerText(), /absolute path/);
  await t.shot("03-opencode-error");
  await page.getByLabel("Directory").fill("/srv/work");
  await page.getByRole("button", { name: "Create task backend" }).click();
  await page.getByRole("heading", { name: "Task backend Coder" }).waitFor();
  assert.equal(await page.getByLabel("Password").inputValue(), "{{secret__opencode_pw}}");

  t.step = "both backends are listed";
  await page.getByRole("link", { name: "Task backends", exact: true }).click();
  await page.getByRole("link", { name: "Research" }).waitFor();
  const listed = await page.locator("table").innerText();
  assert.match(listed, /Coder\s+opencode\s+http:\/\/127\.0\.0\.1:4096 · mock\/tools-0/);
  assert.match(listed, /Research\s+reasoner\s+reasoner-model · 1 tool/);
  await t.shot("04-backends");

  t.step = "an assistant given the reasoner; not while realtime";
  await page.getByRole("link", { name: "Assistants", exact: true }).click();
  await page.getByRole("button", { name: "New assistant" }).click();
  await page.getByLabel("Name", { exact: true }).fill("Desk");
  await page.getByLabel("System prompt").fill("You are the front desk.");
  const picker = page.getByLabel("Task backend");
  assert.equal(await picker.inputValue(), "", "none by default");
  await page.getByLabel("Run mode").selectOption("realtime");
  assert.ok(await picker.isDisabled(), "a realtime assistant cannot pick one");
  await page.getByText("Task backends work with pipeline assistants only").waitFor();
  await page.getByLabel("Run mode").selectOption("pipeline");
  await picker.selectOption({ label: "Research (reasoner)" });
  await page.getByRole("button", { name: "Create assistant" }).click();
  await page.getByRole("heading", { name: "Assistant Desk" }).waitFor();
  assert.notEqual(await page.getByLabel("Task backend").inputValue(), "", "the saved assistant shows its backend");

  t.step = "the model delegates: the tool card, then the task running in the Tasks panel";
  await t.startSession("Desk");
  const tasks = page.getByRole("region", { name: "Tasks" });
  assert.ok(await tasks.isHidden(), "no Tasks panel before the first task");
  await t.say("look up order A-7");
  const card = page.locator(".toolcard", { hasText: "delegate_task" });
  await card.waitFor();
  await card.locator(".result", { hasText: "task_id" }).waitFor();
  await t.reply("I have started a task.").waitFor();
  await tasks.waitFor();
  const row = tasks.locator("li", { hasText: "Order lookup" });
  await row.locator(".pill", { hasText: "running" }).waitFor();
  await page.locator(".sysline", { hasText: "task “Order lookup” started on reasoner" }).waitFor();
  await t.shot("05-task-running");

  t.step = "the task completes with its result, and the report is answered";
  await row.locator(".pill", { hasText: "completed" }).waitFor({ timeout: 30000 });
  assert.match(await row.innerText(), /Order A-7 ships Monday\./);
  await page.locator(".sysline", { hasText: "task “Order lookup” completed" }).waitFor();
  await t.reply("Your order A-7 ships Monday.").waitFor();
  await t.shot("06-task-completed");

  t.step = "the task opened shows the reasoner's transcript";
  await row.getByRole("button", { name: "Open task Order lookup" }).click();
  const dialog = page.getByRole("dialog", { name: "Task Order lookup" });
  await dialog.waitFor();
  const transcript = dialog.getByRole("log", { name: "Task transcript" });
  await transcript.locator(".msg.user", { hasText: "Find out when order A-7 ships." }).waitFor();
  await transcript.locator(".toolcard", { hasText: "query_order" }).first().waitFor();
  await transcript.locator(".toolcard", { hasText: "query_order result" }).filter({ hasText: "shipped Monday" }).waitFor();
  await transcript.locator(".msg.assistant", { hasText: "Order A-7 ships Monday." }).waitFor();
  assert.match(await dialog.innerText(), /Research|tb_/);
  await t.shot("07-task-transcript");
  await dialog.getByRole("button", { name: "Close" }).click();
  await dialog.waitFor({ state: "hidden" });

  t.step = "a second task cancelled from the Tasks panel";
  await t.say("look up order B-9");
  const second = tasks.locator("li", { hasText: "Second lookup" });
  await second.locator(".pill", { hasText: "running" }).waitFor();
  page.once("dialog", (d) => d.accept());
  await second.getByRole("button", { name: "Cancel task Second lookup" }).click();
  await second.locator(".pill", { hasText: "cancelled" }).waitFor();
  await page.locator(".sysline", { hasText: "task “Second lookup” cancelled" }).waitFor();
  await t.reply("The second lookup was cancelled.").waitFor();
  assert.equal(await second.getByRole("button", { name: "Cancel task Second lookup" }).count(), 0, "an ended task has no cancel");
  await t.shot("08-task-cancelled");

  t.step = "the session page lists the tasks too, one opened from there";
  await page.getByRole("link", { name: "Sessions", exact: true }).click();
  await page.getByRole("heading", { name: "Sessions" }).waitFor();
  await page.locator("tbody a").first().click();
  const listedTasks = page.getByRole("region", { name: "Tasks" });
  await listedTasks.locator("li", { hasText: "Second lookup" }).locator(".pill", { hasText: "cancelled" }).waitFor();
  await listedTasks.getByRole("button", { name: "Open task Order lookup" }).click();
  await page.getByRole("dialog", { name: "Task Order lookup" }).getByRole("log", { name: "Task transcript" })
    .locator(".msg.assistant", { hasText: "Order A-7 ships Monday." }).waitFor();
});
