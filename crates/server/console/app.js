// The console's shell: sign-in with a workspace key (kept in this browser
// session only) and a hash router over the pages.

import { get, key, setKey, ApiError } from "./api.js";
import { h, page, field, showError } from "./ui.js";
import { secretsPage } from "./pages/secrets.js";
import { mcpPage, mcpEditor } from "./pages/mcp.js";
import { taskBackendsPage, taskBackendEditor } from "./pages/task_backends.js";
import { toolsPage, toolEditor } from "./pages/tools.js";
import { assistantsPage, assistantEditor } from "./pages/assistants.js";
import { realtimePage, realtimeEditor } from "./pages/realtime.js";
import { sessionsPage, sessionDetail } from "./pages/sessions.js";
import { playgroundPage } from "./pages/playground.js";
import { workflowsPage, workflowEditor } from "./pages/workflows.js";
import { testsPage, testEditor, testRunsPage } from "./pages/tests.js";
import { providersPage } from "./pages/providers.js";

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
  [/^\/sessions$/, sessionsPage],
  [/^\/sessions\/(.+)$/, sessionDetail],
  [/^\/providers$/, providersPage],
  [/^\/playground$/, playgroundPage],
  [/^\/playground\/(.+)$/, playgroundPage],
];

let leave = null;

/** Pages may return a cleanup function (close sockets) run on navigation. */
async function route() {
  if (leave) { leave(); leave = null; }
  if (!key()) return signIn();
  document.getElementById("nav").hidden = false;
  document.getElementById("signout").hidden = false;
  const path = location.hash.replace(/^#/, "").split("?")[0] || "/assistants";
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
  const input = h("input", { type: "password", autocomplete: "off", required: true, placeholder: "rtc_ws_…" });
  const form = h("form", { class: "card", "aria-label": "Sign in" },
    notice ? h("div", { class: "banner warn" }, notice) : null,
    h("p", { class: "muted" }, "Sign in with a workspace API key. It is kept in this browser tab only and sent to this server alone."),
    field("Workspace API key", "key", input),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Sign in")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    setKey(input.value.trim());
    try {
      await get("/v1/assistants");
      route();
    } catch (e) {
      setKey(null);
      showError(form, e.status === 401 ? { code: "unauthorized", message: "This key is not valid for any workspace.", field: "key" } : e);
    }
  });
  page("Sign in", form);
  input.focus();
}

document.getElementById("signout").addEventListener("click", () => {
  setKey(null);
  location.hash = "#/assistants";
  route();
});
window.addEventListener("hashchange", route);
route();
