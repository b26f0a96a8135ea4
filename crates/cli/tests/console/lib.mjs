// Shared by the console's browser scenarios: launch Debian's Chromium
// through playwright-core, collect page errors, name the failing step and
// save screenshots in OUT_DIR. BASE_URL and API_KEY come from the Rust
// test that started the server.

import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import assert from "node:assert/strict";

export const BASE = process.env.BASE_URL;
export const KEY = process.env.API_KEY;
const OUT = process.env.OUT_DIR;

/** Run one scenario; exits non-zero naming the step that failed. `args`
 * are extra Chromium switches (a fake microphone, say). */
export async function scenario(name, body, { args = [] } = {}) {
  mkdirSync(OUT, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", ...args],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  // HTTP errors a scenario provokes on purpose (401, 422) are logged by the
  // browser as failed loads; anything else is a problem.
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) problems.push(`console error: ${m.text()}`);
  });
  const t = {
    page,
    context,
    step: "start",
    shot: (shotName) => page.screenshot({ path: `${OUT}/${name}-${shotName}.png`, fullPage: true }),
    fieldError: (path) => page.locator(`.field.invalid[data-field="${path}"] .error`),
    async signIn() {
      await page.goto(`${BASE}/`);
      // Signing in asks who the key is; no request fails on the way.
      const failed = [];
      const watch = (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`); };
      page.on("response", watch);
      await page.getByLabel("Workspace API key").fill(KEY);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("heading", { name: "Assistants" }).waitFor();
      page.off("response", watch);
      assert.deepEqual(failed, [], "no failed request while signing in");
    },
    /** Open the playground on `assistant`, start a session, wait for the socket. */
    async startSession(assistant, setup) {
      await page.getByRole("link", { name: "Playground", exact: true }).click();
      await page.getByRole("heading", { name: "Playground", exact: true }).waitFor();
      await page.getByRole("combobox", { name: "Assistant" }).selectOption({ label: assistant });
      if (setup) await setup();
      await page.getByRole("button", { name: "Start session" }).click();
      await page.getByText("connected").waitFor();
      return decodeURIComponent(page.url().split("/playground/")[1]);
    },
    async say(text) {
      await page.getByLabel("Message", { exact: true }).fill(text);
      await page.getByRole("button", { name: "Send", exact: true }).click();
    },
    reply: (text) => page.locator(".msg.assistant", { hasText: text }),
  };
  try {
    await body(t);
    assert.deepEqual(problems, [], "no errors in the page");
    console.log(`${name}: passed`);
  } catch (e) {
    await t.shot("failure").catch(() => {});
    console.error(`FAILED at: ${t.step}\n${e.stack || e}\n${problems.join("\n")}`);
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}
