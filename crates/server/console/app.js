// The console's shell: sign-in with a workspace key or the admin token
// (kept in this browser session only), the admin's opened workspace, and a
// hash router over the pages.

import { me, key, setKey, isAdmin, setAdmin, opened, open, ApiError } from "./api.js";
import { h, page, field, showError } from "./ui.js";
import { secretsPage } from "./pages/secrets.js";
import { mcpPage, mcpEditor } from "./pages/mcp.js";
import { taskBackendsPage, taskBackendEditor } from "./pages/task_backends.js";
import { toolsPage, toolEditor } from "./pages/tools.js";
import { assistantsPage, assistantEditor } from "./pages/assistants.js";
import { realtimePage, realtimeEditor } from "./pages/realtime.js";
import { speechPage, speechEditor } from "./pages/speech.js";
import { sessionsPage, sessionDetail } from "./pages/sessions.js";
import { playgroundPage } from "./pages/playground.js";
import { workflowsPage, workflowEditor } from "./pages/workflows.js";
import { testsPage, testEditor, testRunsPage } from "./pages/tests.js";
import { providersPage } from "./pages/providers.js";
import { workspacesPage } from "./pages/workspaces.js";

const testRoutes = (kind) => [
  [new RegExp(`^/${kind}/([^/]+)/tests$`), (id) => testsPage(kind, id)],
  [new RegExp(`^/${kind}/([^/]+)/tests/([^/]+)/runs$`), (id, t) => testRunsPage(kind, id, t)],
  [new RegExp(`^/${kind}/([^/]+)/tests/([^/]+)$`), (id, t) => testEditor(kind, id, t)],
];

const routes = [
  ...testRoutes("assistants"),
  ...testRoutes("workflows"),
  [/^\/assistants$/, assistantsPage],
  [/^\/assistants\/(.+)$/, assistantEditor],
  [/^\/workflows$/, workflowsPage],
  [/^\/workflows\/(.+)$/, workflowEditor],
  [/^\/tools$/, toolsPage],
  [/^\/tools\/(.+)$/, toolEditor],
  [/^\/mcp$/, mcpPage],
  [/^\/mcp\/(.+)$/, mcpEditor],
  [/^\/task-backends$/, taskBackendsPage],
  [/^\/task-backends\/(.+)$/, taskBackendEditor],
  [/^\/secrets$/, secretsPage],
  [/^\/realtime$/, realtimePage],
  [/^\/realtime\/(.+)$/, realtimeEditor],
  [/^\/speech$/, speechPage],
  [/^\/speech\/(.+)$/, speechEditor],
  [/^\/sessions$/, sessionsPage],
  [/^\/sessions\/(.+)$/, sessionDetail],
  [/^\/providers$/, providersPage],
  [/^\/workspaces$/, workspacesPage],
  [/^\/playground$/, playgroundPage],
  [/^\/playground\/(.+)$/, playgroundPage],
];

let leave = null;

/** Pages may return a cleanup function (close sockets) run on navigation. */
async function route() {
  if (leave) { leave(); leave = null; }
  if (!key()) return signIn();
  const admin = isAdmin();
  const ws = admin ? opened() : null;
  let path = location.hash.replace(/^#/, "").split("?")[0] || (admin && !ws ? "/workspaces" : "/assistants");
  // The admin manages a workspace once one is open. The address follows
  // the page shown: a stale one would make a later link to it (Open's
  // #/assistants) a change of nothing, with no hashchange to route.
  if (admin && !ws && path !== "/workspaces" && path !== "/providers") {
    path = "/workspaces";
    history.replaceState(null, "", "#/workspaces");
  }
  document.getElementById("nav").hidden = admin && !ws;
  document.getElementById("signout").hidden = false;
  const scope = document.getElementById("scope");
  scope.hidden = !admin;
  scope.replaceChildren(...(admin ? [
    ws ? `Admin in ${ws.name} · ` : "Admin · ",
    h("a", { href: "#/workspaces", onclick: () => open(null) }, ws ? "all workspaces" : "workspaces"),
  ] : []));
  for (const a of document.querySelectorAll("#nav a")) {
    const here = path.startsWith(a.getAttribute("href").slice(1));
    if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  for (const [re, render] of routes) {
    const m = path.match(re);
    if (m) {
      try {
        const cleanup = await render(...m.slice(1).map(decodeURIComponent));
        if (typeof cleanup === "function") leave = cleanup;
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) { setKey(null); return signIn("The key was refused; sign in again."); }
        page("Something went wrong", h("div", { class: "banner bad", role: "alert" }, `${e.code || "error"}: ${e.message}`));
      }
      document.getElementById("main").focus({ preventScroll: true });
      return;
    }
  }
  page("Not found", h("p", {}, "No such page. "), h("a", { href: "#/assistants" }, "Go to assistants"));
}

function signIn(notice) {
  document.getElementById("nav").hidden = true;
  document.getElementById("signout").hidden = true;
  document.getElementById("scope").hidden = true;
  const input = h("input", { type: "password", autocomplete: "off", required: true, placeholder: "rtc_ws_…" });
  const form = h("form", { class: "card", "aria-label": "Sign in" },
    notice ? h("div", { class: "banner warn" }, notice) : null,
    h("p", { class: "muted" }, "Sign in with a workspace API key, or with the admin token (printed by the server's first start) to manage workspaces. It is kept in this browser tab only and sent to this server alone."),
    field("Workspace API key or admin token", "key", input),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Sign in")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    setKey(input.value.trim());
    try {
      // Who the token is, asked once (nothing provoked to fail).
      const admin = (await me()).kind === "admin";
      setAdmin(admin);
      const home = admin ? "#/workspaces" : "#/assistants";
      // A changed hash routes by itself (hashchange); routing twice would
      // let a late render replace the page the user went on to.
      if (location.hash !== home) location.hash = home;
      else route();
    } catch (e) {
      setKey(null);
      showError(form, e.status === 401 ? { code: "unauthorized", message: "This is neither a workspace key nor the admin token.", field: "key" } : e);
    }
  });
  page("Sign in", form);
  input.focus();
}

document.getElementById("signout").addEventListener("click", () => {
  setKey(null);
  // A changed hash routes by itself (hashchange): routing here too would
  // draw the sign-in form twice, the second one emptying what the user
  // began to type.
  if (location.hash !== "#/assistants") location.hash = "#/assistants";
  else route();
});
window.addEventListener("hashchange", route);
route();
