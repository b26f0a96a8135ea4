// Secrets and MCP in a real browser: a write-only secret, an MCP server
// whose header uses it, "discover tools" against the real everything
// server, and an MCP tool picked from the discovered tools.

import assert from "node:assert/strict";
import { scenario } from "./lib.mjs";

const MCP_URL = process.env.MCP_URL;

await scenario("mcp", async (t) => {
  const { page } = t;
  await t.signIn();

  t.step = "a secret: saved, listed by name, its value never shown";
  await page.getByRole("link", { name: "Secrets", exact: true }).click();
  await page.getByLabel("Name", { exact: true }).fill("mcp_token");
  await page.getByLabel("Value").fill("s3cr3t-value");
  await page.getByRole("button", { name: "Save secret" }).click();
  await t.fieldError("name").waitFor();
  await page.getByLabel("Name", { exact: true }).fill("secret__mcp_token");
  await page.getByRole("button", { name: "Save secret" }).click();
  await page.getByRole("cell", { name: "secret__mcp_token" }).waitFor();
  assert.doesNotMatch(await page.locator("main").innerText(), /s3cr3t-value/);
  await t.shot("01-secrets");

  t.step = "an MCP server with a header using the secret; discover its tools";
  await page.getByRole("link", { name: "MCP servers", exact: true }).click();
  await page.getByRole("button", { name: "New MCP server" }).click();
  await page.getByLabel("Name", { exact: true }).fill("everything");
  await page.getByLabel("URL").fill(MCP_URL);
  await page.getByRole("button", { name: "Add header" }).click();
  await page.getByLabel("Header", { exact: true }).fill("Authorization");
  await page.getByLabel("Value", { exact: true }).fill("Bearer {{secret__mcp_token}}");
  await page.getByRole("button", { name: "Create" }).click();
  await page.getByRole("heading", { name: "MCP server everything" }).waitFor();
  await page.getByRole("button", { name: "Discover tools" }).click();
  await page.getByRole("heading", { name: /\d+ tools/ }).waitFor();
  await page.getByText("echo", { exact: true }).waitFor();
  await t.shot("02-discovered");

  t.step = "an MCP tool picked from the discovered tools";
  await page.getByRole("link", { name: "Tools", exact: true }).click();
  await page.getByRole("button", { name: "New tool" }).click();
  await page.getByLabel("Type").selectOption("mcp");
  await page.getByLabel("MCP server").selectOption({ label: "everything" });
  await page.getByRole("button", { name: "Discover tools" }).click();
  await page.getByText(/tools found/).waitFor();
  await page.getByLabel("Remote tool").selectOption("echo");
  // The picked tool's schema in the parameters form, locked: its server's.
  assert.equal(await page.getByRole("group", { name: "Parameter message" }).getByLabel("Parameter name").inputValue(), "message");
  assert.equal(await page.getByRole("group", { name: "Parameter message" }).getByLabel("Parameter name").isDisabled(), true);
  assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "echo");
  await page.getByRole("button", { name: "Create tool" }).click();
  await page.getByRole("heading", { name: "Tool echo" }).waitFor();
  await t.shot("03-mcp-tool");
});
