// The playground's live side in a real browser: a client tool answered by
// hand, a sub-agent in the tree panel, a goal in the goals panel, a
// dropped connection that resumes from the last event (nothing lost,
// nothing twice), and a handoff answered as the human agent.

import assert from "node:assert/strict";
import { scenario, BASE, KEY } from "./lib.mjs";

await scenario("live", async (t) => {
  const { page } = t;
  // Keep the page's sockets reachable, to drop one on purpose.
  await page.addInitScript(() => {
    const Native = window.WebSocket;
    window.__sockets = [];
    window.WebSocket = class extends Native {
      constructor(...args) { super(...args); window.__sockets.push(this); }
    };
  });
  await t.signIn();

  t.step = "a client tool answered by hand";
  const sid = await t.startSession("Ops", async () => {
    await page.getByRole("combobox", { name: "How to answer show_map" }).selectOption("manual");
  });
  await t.say("show the map");
  const call = page.locator(".toolcard", { hasText: "client tool" });
  await call.waitFor();
  assert.match(await call.innerText(), /Lisbon/);
  await page.getByLabel("Result for show_map").fill('{"shown": true, "zoom": 12}');
  await t.shot("01-client-tool");
  await call.getByRole("button", { name: "Send result" }).click();
  await t.reply("Map shown.").waitFor();
  await page.locator(".toolcard .result", { hasText: "zoom" }).waitFor();

  t.step = "a sub-agent appears in the tree and reports";
  await t.say("start a helper");
  await t.reply("Prices are in.").waitFor();
  const tree = page.getByRole("region", { name: "Sub-agents" });
  await tree.getByText("Price check").waitFor();
  await tree.getByText("reported").waitFor();

  t.step = "a goal drives turns and shows in the goals panel";
  await t.say("keep at it");
  const goals = page.getByRole("region", { name: "Goals" });
  await goals.getByText("exhausted").waitFor();
  assert.match(await goals.innerText(), /the user says thanks/);
  await t.shot("02-panels");

  t.step = "the connection drops; a message sent meanwhile arrives once";
  await page.evaluate(() => window.__sockets.at(-1).close());
  await page.getByText("reconnecting…").waitFor();
  const sent = await fetch(`${BASE}/v1/sessions/${sid}/messages`, {
    method: "POST",
    headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ text: "after the reconnect" }),
  });
  assert.equal(sent.status, 202);
  await t.reply("Reply after the reconnect.").waitFor();
  await page.getByText("idle").waitFor();
  assert.equal(await t.reply("Reply after the reconnect.").count(), 1, "not shown twice");
  assert.equal(await t.reply("Map shown.").count(), 1, "nothing replayed twice");
  assert.ok(await page.evaluate(() => window.__sockets.length) >= 2, "a new socket was opened");

  t.step = "a handoff answered as the human agent, then handed back";
  await t.say("I want a human");
  const agent = page.getByRole("region", { name: "Human agent" });
  await agent.waitFor();
  await agent.getByLabel("Reply as the human agent").fill("Hi, I am Ann from support.");
  await agent.getByRole("button", { name: "Send as agent" }).click();
  await page.locator(".msg.human_agent", { hasText: "Hi, I am Ann from support." }).waitFor();
  await t.shot("03-handoff");
  await agent.getByRole("button", { name: "Hand back to the model" }).click();
  await page.locator(".sysline", { hasText: "back to the model" }).waitFor();
  await agent.waitFor({ state: "hidden" });

  t.step = "a message of two lines: Shift+Enter starts a line, Enter sends";
  const box = page.getByLabel("Message", { exact: true });
  await box.click();
  await box.pressSequentially("first line");
  await box.press("Shift+Enter");
  await box.pressSequentially("second line");
  await box.press("Enter");
  const sentTwo = page.locator(".msg.user", { hasText: "second line" });
  await sentTwo.waitFor();
  assert.match(await sentTwo.innerText(), /first line\s+second line/);
  assert.equal(await box.inputValue(), "", "the box is emptied");

  t.step = "the session and its assistant show what their model calls cost";
  await page.goto(`${BASE}/#/sessions/${sid}`);
  const used = page.getByLabel("Usage", { exact: true });
  await used.waitFor();
  const calls = Number((await used.innerText()).match(/^([\d,]+) model calls/)[1].replace(/,/g, ""));
  assert.ok(calls >= 5, `the session's calls are counted: ${await used.innerText()}`);
  assert.match(await used.innerText(), /input tokens \([\d,]+ cached\) · [\d,]+ output tokens/);
  const assistants = await (await fetch(`${BASE}/v1/assistants`, { headers: { Authorization: `Bearer ${KEY}` } })).json();
  const ops = assistants.data.find((a) => a.name === "Ops");
  await page.goto(`${BASE}/#/assistants/${ops.id}`);
  const month = page.getByLabel("Usage this month");
  await month.waitFor();
  assert.match(await month.innerText(), /^This month \(\d{4}-\d\d-01 to \d{4}-\d\d-\d\d\): [\d,]+ model calls/);
});
