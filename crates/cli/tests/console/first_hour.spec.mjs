// The console's first hour (issue 39, point 3) in a real browser, at
// 1,440 px. As the admin: no nav before sign-in, the one-time key copied
// (and selected where no clipboard is), a section's address visited
// before a workspace is open and then Open that opens it, the nav on one
// line at 1,440 px and usable narrower. With a workspace key: provider and
// model picked from the server's providers, web built-ins the server does
// not offer shown off with a note (the saved setting kept), values that
// come back as typed, a picked MCP tool's name and description, workflow
// edge ids that follow their endpoints, a client tool still answered after
// a reload, End in the playground and the session view, the event log's
// streamed pieces grouped, the sessions list by name with filters.

import assert from "node:assert/strict";
import { scenario, BASE } from "./lib.mjs";

const ADMIN = process.env.ADMIN_TOKEN;

/** How far the page scrolls sideways (0: it does not). */
const sideways = (page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

/** The nav's links: how many rows they take and where the rightmost ends. */
const navLinks = (page) => page.$$eval("#nav a", (links) => {
  const boxes = links.map((a) => a.getBoundingClientRect());
  return { rows: new Set(boxes.map((b) => Math.round(b.top))).size, right: Math.max(...boxes.map((b) => b.right)) };
});

await scenario("first-hour-admin", async (t) => {
  const { page, context } = t;
  page.on("dialog", (d) => d.accept());
  await page.setViewportSize({ width: 1440, height: 900 });

  t.step = "1. before sign-in there is no nav (nor sign out)";
  await page.goto(`${BASE}/`);
  await page.getByLabel("Workspace API key or admin token").waitFor();
  assert.equal(await page.locator("#nav").isVisible(), false, "the nav is hidden before sign-in");
  assert.equal(await page.getByRole("button", { name: "Sign out" }).isVisible(), false);
  await t.shot("01-sign-in");

  t.step = "12. a new workspace's key shown once, copied with one click";
  await page.getByLabel("Workspace API key or admin token").fill(ADMIN);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Workspaces" }).waitFor();
  assert.equal(await page.locator("#nav").isVisible(), false, "no sections before a workspace is open");
  await page.getByLabel("Name", { exact: true }).fill("Browser Hour");
  await page.getByRole("button", { name: "Create workspace" }).click();
  const keyBox = page.getByLabel("API key of Browser Hour");
  const key = await keyBox.inputValue();
  assert.match(key, /^rtc_ws_/);
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: BASE });
  const banner = page.getByRole("region", { name: "New API key" });
  await banner.getByRole("button", { name: "Copy" }).click();
  await banner.getByText("Copied to the clipboard.").waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);

  t.step = "12. without a clipboard API, Copy selects the key";
  await page.evaluate(() => Object.defineProperty(navigator, "clipboard", { value: undefined, configurable: true }));
  await banner.getByRole("button", { name: "Copy" }).click();
  await banner.getByText(/Selected: press Ctrl\+C/).waitFor();
  assert.deepEqual(await keyBox.evaluate((i) => [document.activeElement === i, i.selectionStart, i.selectionEnd]), [true, 0, key.length]);
  await t.shot("02-key-copied");

  t.step = "2. a section's address before a workspace is open shows the workspaces; Open then opens one";
  const listed = page.waitForResponse((r) => r.url().endsWith("/v1/workspaces") && r.request().method() === "GET");
  await page.evaluate(() => { location.hash = "#/assistants"; });
  await listed;
  await page.waitForURL(/#\/workspaces$/);
  await page.locator('tr[data-workspace="Browser Hour"]').getByRole("button", { name: "Open" }).click();
  await page.getByRole("heading", { name: "Assistants" }).waitFor();
  await page.getByText("Admin in Browser Hour").waitFor();
  assert.equal(await page.locator("#nav").isVisible(), true);

  t.step = "13. the nav fits on one line at 1,440 px (admin in a workspace: the longest bar)";
  let nav = await navLinks(page);
  assert.equal(nav.rows, 1, "one line of sections");
  assert.ok(nav.right <= 1440, `every section visible (${nav.right})`);
  const signOut = await page.getByRole("button", { name: "Sign out" }).boundingBox();
  assert.ok(signOut.x + signOut.width <= 1440 && signOut.y < 40, "sign out on the same line");
  assert.equal(await sideways(page), 0);
  await t.shot("03-nav-1440");

  t.step = "13. narrower, every section still reachable and the page never scrolls sideways";
  for (const width of [1024, 800]) {
    await page.setViewportSize({ width, height: 900 });
    nav = await navLinks(page);
    assert.ok(nav.right <= width, `every section visible at ${width} px (${nav.right})`);
    assert.equal(await sideways(page), 0, `no sideways scrolling at ${width} px`);
    await t.shot(`04-nav-${width}`);
  }
  await page.setViewportSize({ width: 560, height: 900 });
  assert.equal(await sideways(page), 0, "no sideways scrolling at 560 px");
  await page.getByRole("link", { name: "Sessions", exact: true }).click();
  await page.getByRole("heading", { name: "Sessions" }).waitFor();
  await t.shot("05-nav-560");
});

await scenario("first-hour", async (t) => {
  const { page } = t;
  page.on("dialog", (d) => d.accept());
  await page.setViewportSize({ width: 1440, height: 900 });
  await t.signIn();
  const saved = (path) => page.waitForResponse((r) => r.url().includes(path) && ["POST", "PUT"].includes(r.request().method()) && r.status() < 300);

  t.step = "11. provider and model are picked from the server's providers";
  await page.getByRole("button", { name: "New assistant" }).click();
  await page.getByRole("heading", { name: "New assistant" }).waitFor();
  await page.getByLabel("Name", { exact: true }).fill("Helper");
  const provider = page.getByLabel("Provider", { exact: true });
  await provider.locator('option[value="backup"]').waitFor({ state: "attached" });
  const values = (select) => select.locator("option").evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(await values(provider), ["", "backup"], "the default (once) and the named provider");
  const model = page.getByRole("combobox", { name: "Model", exact: true });
  assert.ok((await values(model)).includes("mock-model"), "the default provider's model is offered");
  await provider.selectOption("backup");
  assert.deepEqual(await values(model), ["", "backup-model", "backup-small", " other"]);
  await model.selectOption({ label: "another model…" });
  await page.getByLabel("Model name").fill("my-custom-model");

  t.step = "7. web search is not configured: off, disabled, said why; web fetch is offered";
  const search = page.getByRole("checkbox", { name: /Web search/ });
  assert.equal(await search.isDisabled(), true);
  assert.equal(await search.isChecked(), false);
  await page.getByText("not configured on this server (RTC_WEB_SEARCH_ENGINES)").waitFor();
  const webFetch = page.getByRole("checkbox", { name: /Web fetch/ });
  assert.equal(await webFetch.isDisabled(), false);
  assert.equal(await webFetch.isChecked(), true);
  await webFetch.uncheck();

  t.step = "6. a variable's default and a literal argument typed as plain text";
  await page.getByRole("button", { name: "Add variable" }).click();
  await page.locator('[data-field="dynamicVariables[0].name"] input').fill("nickname");
  const defaultBox = page.locator('[data-field="dynamicVariables[0].default"] input');
  await defaultBox.fill("friend");
  await page.getByRole("button", { name: "Bind a tool" }).click();
  await page.getByLabel("Tool", { exact: true }).selectOption({ label: "show_map (client)" });
  await page.getByLabel("Source of city").selectOption("literal");
  await page.getByLabel("Literal value for city").fill("Porto");
  await Promise.all([saved("/v1/assistants"), page.getByRole("button", { name: "Create assistant" }).click()]);
  await page.getByRole("heading", { name: "Assistant Helper" }).waitFor();

  t.step = "6, 7, 11. the saved assistant comes back as typed";
  assert.equal(await defaultBox.inputValue(), "friend", "not \"friend\"");
  assert.equal(await page.getByLabel("Literal value for city").inputValue(), "Porto");
  await provider.locator('option[value="backup"]').waitFor({ state: "attached" });
  assert.equal(await provider.inputValue(), "backup");
  assert.equal(await model.inputValue(), " other");
  assert.equal(await page.getByLabel("Model name").inputValue(), "my-custom-model");
  assert.equal(await webFetch.isChecked(), false);
  assert.equal(await search.isDisabled(), true);
  await t.shot("01-assistant");

  t.step = "7. an assistant that turned web search off keeps it off through a save";
  await page.getByRole("link", { name: "Assistants", exact: true }).click();
  await page.getByRole("link", { name: "Maps" }).click();
  await page.getByRole("heading", { name: "Assistant Maps" }).waitFor();
  await page.getByText("this assistant's setting (off) is kept").waitFor();
  assert.equal(await defaultBox.inputValue(), "friend");
  await Promise.all([saved("/v1/assistants/"), page.getByRole("button", { name: "Save", exact: true }).click()]);

  t.step = "3. picking a discovered MCP tool fills in its name and description, until typed by hand";
  await page.getByRole("link", { name: "Tools", exact: true }).click();
  await page.getByRole("button", { name: "New tool" }).click();
  await page.getByRole("heading", { name: "New tool" }).waitFor();
  await page.locator('.field[data-field="type"] select').selectOption("mcp");
  const server = page.getByLabel("MCP server");
  await server.selectOption({ label: "everything" });
  await page.getByRole("button", { name: "Discover tools" }).click();
  await page.getByText(/tools found/).waitFor();
  const found = await page.evaluate(async (id) => {
    const r = await fetch(`/v1/mcp-servers/${id}/tools`, { headers: { Authorization: `Bearer ${sessionStorage.getItem("rtc.workspaceKey")}` } });
    return (await r.json()).data.map((d) => [d.name, d.description || ""]);
  }, await server.inputValue());
  assert.ok(found.length >= 3, "the everything server offers several tools");
  const remote = page.getByLabel("Remote tool");
  const name = page.locator('.field[data-field="name"] input');
  const description = page.locator('.field[data-field="description"] textarea');
  assert.deepEqual([await remote.inputValue(), await name.inputValue(), await description.inputValue()], [found[0][0], ...found[0]]);
  await remote.selectOption(found[1][0]);
  assert.deepEqual([await name.inputValue(), await description.inputValue()], found[1], "the second pick's name and description");
  await name.fill("my_tool");
  await remote.selectOption(found[2][0]);
  assert.deepEqual([await name.inputValue(), await description.inputValue()], ["my_tool", found[2][1]], "a typed name stays");
  await t.shot("02-mcp-pick");
  await Promise.all([saved("/v1/tools"), page.getByRole("button", { name: "Create tool" }).click()]);
  await page.getByRole("heading", { name: "Tool my_tool" }).waitFor();

  t.step = "4. an edge id derived from its endpoints follows them; a named one stays";
  await page.getByRole("link", { name: "Workflows", exact: true }).click();
  await page.getByRole("link", { name: "Routing" }).click();
  await page.getByRole("heading", { name: "Workflow Routing" }).waitFor();
  const graph = page.getByRole("group", { name: "Workflow graph" });
  await graph.getByRole("button", { name: /^Edge greet_to_done/ }).click();
  await page.getByRole("form", { name: "Edge greet_to_done" }).getByLabel("To", { exact: true }).selectOption("lookup");
  const moved = page.getByRole("form", { name: "Edge greet_to_lookup" });
  assert.equal(await moved.getByLabel("Edge id").inputValue(), "greet_to_lookup");
  await graph.locator('g.wf-edge[data-edge-id="greet_to_lookup"]').waitFor();
  await graph.getByRole("button", { name: /^Edge escalate/ }).click();
  const named = page.getByRole("form", { name: "Edge escalate" });
  await named.getByLabel("To", { exact: true }).selectOption("done");
  assert.equal(await named.getByLabel("Edge id").inputValue(), "escalate", "a name the user gave stays");
  await graph.getByRole("button", { name: /^Node lookup/ }).click();
  const node = page.getByRole("form", { name: "Node lookup" });
  await node.getByLabel("Node id").fill("find");
  await node.getByLabel("Node id").press("Tab");
  await graph.locator('g.wf-edge[data-edge-id="greet_to_find"]').waitFor();
  await t.shot("03-workflow");
  await Promise.all([saved("/v1/workflows/"), page.getByRole("button", { name: "Save", exact: true }).click()]);

  t.step = "5. a client tool answered by hand, the page reloaded: still answered, no live buttons";
  const mapSession = await t.startSession("Maps", async () => {
    await page.getByRole("combobox", { name: "How to answer show_map" }).selectOption("manual");
  });
  await t.say("show the map");
  const call = page.locator(".toolcard", { hasText: "client tool" });
  await call.getByRole("button", { name: "Send result" }).click();
  await t.reply("Map shown.").waitFor();
  await page.reload();
  await t.reply("Map shown.").waitFor();
  await call.getByText("answered", { exact: true }).waitFor();
  assert.equal(await call.getByRole("button").count(), 0, "no buttons on an answered call");
  assert.equal(await page.locator(".sysline.bad").count(), 0, "nothing answered twice");
  const answeredIds = await page.evaluate(async (sid) => {
    const r = await fetch(`/v1/sessions/${sid}/messages`, { headers: { Authorization: `Bearer ${sessionStorage.getItem("rtc.workspaceKey")}` } });
    return (await r.json()).data.filter((m) => m.role === "tool").map((m) => m.toolCallId);
  }, mapSession);
  assert.ok(answeredIds.includes(await call.getAttribute("data-call-id")), "the history's tool message names the call");

  t.step = "6. the variables panel shows a string as it is";
  const vars = page.getByRole("region", { name: "Variables" });
  await vars.getByText("nickname", { exact: true }).waitFor();
  assert.equal(await vars.locator("dt", { hasText: "nickname" }).evaluate((dt) => dt.nextElementSibling.textContent), "friend");
  await t.shot("04-reloaded");

  t.step = "8. End in the playground";
  await page.getByRole("button", { name: "End session" }).click();
  await page.getByRole("status").getByText("ended", { exact: true }).waitFor();
  assert.equal(await page.getByLabel("Message", { exact: true }).isDisabled(), true);
  assert.equal(await page.getByRole("button", { name: "End session" }).count(), 0);

  t.step = "10. a long streamed answer: one collapsed line in the event log, no sideways page";
  const story = await t.startSession("Maps");
  await t.say("tell me a long story");
  await t.reply("example.com").waitFor();
  await page.getByRole("link", { name: story }).click();
  await page.getByRole("heading", { name: /^Session / }).waitFor();
  const log = page.getByRole("table", { name: "Event log" });
  const group = log.locator("tr.delta-group");
  await group.waitFor();
  assert.equal(await group.count(), 1, "the deltas of one message are one line");
  assert.match(await group.innerText(), /Once upon a time/);
  assert.equal(await log.locator("tr.delta-piece:visible").count(), 0, "collapsed");
  await group.getByRole("button", { name: /pieces/ }).click();
  assert.ok(await log.locator("tr.delta-piece:visible").count() > 5, "expanded, each piece");
  assert.equal(await sideways(page), 0, "the page does not scroll sideways");
  await t.shot("05-event-log");

  t.step = "8. End in the session view";
  await page.getByRole("button", { name: "End session" }).click();
  await page.locator("main p .pill", { hasText: "ended" }).waitFor();
  assert.equal(await page.getByRole("button", { name: "End session" }).count(), 0);

  t.step = "9. the sessions list: names, test mode, status, filters kept in the address";
  await t.startSession("Maps", async () => { await page.getByLabel(/^Test mode/).check(); });
  await page.getByRole("link", { name: "Sessions", exact: true }).click();
  const table = page.getByRole("table", { name: "Sessions" });
  const rows = table.locator("tbody tr");
  await rows.first().waitFor();
  assert.equal(await rows.count(), 3);
  assert.deepEqual(await rows.locator("td:nth-child(2)").allInnerTexts(), ["Maps", "Maps", "Maps"], "names, not ids");
  assert.equal(await table.locator(".pill", { hasText: "test mode" }).count(), 1);
  await page.getByRole("combobox", { name: "Status" }).selectOption("ended");
  assert.equal(await rows.count(), 2);
  await page.getByRole("combobox", { name: "Status" }).selectOption("");
  await page.getByRole("combobox", { name: "Test mode" }).selectOption("only");
  assert.equal(await rows.count(), 1);
  assert.match(page.url(), /#\/sessions\?test=only$/);
  await page.reload();
  await rows.first().waitFor();
  assert.equal(await rows.count(), 1, "the filter survives a reload");
  assert.equal(await page.getByRole("combobox", { name: "Test mode" }).inputValue(), "only");
  await page.getByRole("combobox", { name: "Assistant or workflow" }).selectOption({ label: "Maps (assistant)" });
  assert.equal(await rows.count(), 1);
  await t.shot("06-sessions");
});
