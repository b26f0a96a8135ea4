// The admin's view (signed in with the admin token): the workspaces, a new
// one (its key shown once), a key rotated (the new key shown once), and
// "Open" to manage a workspace as with its key.

import { list, post, open } from "../api.js";
import { h, page, field, text, showError, clearErrors, toast, go } from "../ui.js";

/** A key shown once, with what to do with it and a Copy button. */
function keyBanner(what, ws) {
  const input = h("input", { type: "text", readonly: true, value: ws.apiKey, "aria-label": `API key of ${ws.name}`, class: "code" });
  input.addEventListener("focus", () => input.select());
  const said = h("span", { class: "status", role: "status" });
  const copy = h("button", { type: "button", class: "small" }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(ws.apiKey);
      said.textContent = "Copied to the clipboard.";
    } catch {
      // No clipboard API here (a page not served over HTTPS or localhost,
      // or permission refused): select the key for the user to copy.
      input.focus();
      input.select();
      said.textContent = "Selected: press Ctrl+C (⌘C on a Mac) to copy it.";
    }
  });
  return h("div", { class: "banner warn", role: "region", "aria-label": "New API key" },
    h("strong", {}, `${what} ${ws.name}. `), "Its API key is shown only now: copy it and give it to the workspace's operators.",
    h("div", { class: "keyrow" }, input, copy), said);
}

/** The page; `created`: a workspace just made, whose key is shown once. */
export async function workspacesPage(created) {
  const items = await list("/v1/workspaces");
  const notice = h("div", { "aria-live": "polite" }, created?.apiKey ? keyBanner("Created", created) : null);
  const name = text("", { placeholder: "Acme support" });
  const form = h("form", { class: "card", "aria-label": "New workspace" },
    field("Name", "name", name),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Create workspace")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const ws = await post("/v1/workspaces", { name: name.value.trim() });
      await workspacesPage(ws);
    } catch (e) { showError(form, e); }
  });
  page("Workspaces", notice,
    h("p", { class: "hint" }, "Signed in with the admin token. Open a workspace to manage its assistants, tools and sessions."),
    items.length ? h("table", { "aria-label": "Workspaces" },
      h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Id"), h("th", {}, "Created"), h("th", {}, ""))),
      h("tbody", {}, items.map((ws) => {
        const openBtn = h("button", { type: "button", class: "small" }, "Open");
        openBtn.addEventListener("click", () => {
          open(ws);
          toast(`Workspace ${ws.name} opened`);
          go("#/assistants");
        });
        const rotate = h("button", { type: "button", class: "small ghost" }, "Rotate key");
        rotate.addEventListener("click", async () => {
          if (!confirm(`Give ${ws.name} a new API key? The old one stops working at once.`)) return;
          try {
            const rotated = await post(`/v1/workspaces/${encodeURIComponent(ws.id)}/rotate-key`);
            notice.replaceChildren(keyBanner("New key for", rotated));
          } catch (e) { showError(notice, e); }
        });
        return h("tr", { dataset: { workspace: ws.name } }, h("td", {}, ws.name), h("td", {}, h("code", {}, ws.id)),
          h("td", {}, new Date(ws.createdAt).toLocaleString()), h("td", { class: "actions" }, openBtn, rotate));
      })))
      : h("p", { class: "muted" }, "No workspaces yet: create the first one."),
    form);
}
