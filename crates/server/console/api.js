// The public REST API with the key of this browser session: a workspace
// key, or the admin token acting in the workspace it opened (sent as
// `X-Rtc-Workspace`, except to the admin's own `/v1/workspaces`).

const KEY = "rtc.workspaceKey";
const ADMIN = "rtc.admin";
const OPENED = "rtc.adminWorkspace";

/** The answer of `GET /v1/me` for the key of this tab (a promise), or null. */
let asked = null;

/** Whether the key of this tab is the admin token. */
export function isAdmin() {
  return sessionStorage.getItem(ADMIN) === "1";
}

export function setAdmin(admin) {
  if (admin) sessionStorage.setItem(ADMIN, "1");
  else { sessionStorage.removeItem(ADMIN); sessionStorage.removeItem(OPENED); }
}

/** The workspace the admin opened: `{id, name}`, or null. */
export function opened() {
  try { return JSON.parse(sessionStorage.getItem(OPENED) || "null"); } catch { return null; }
}

export function open(workspace) {
  if (workspace) sessionStorage.setItem(OPENED, JSON.stringify({ id: workspace.id, name: workspace.name }));
  else sessionStorage.removeItem(OPENED);
}

export function key() {
  return sessionStorage.getItem(KEY);
}

export function setKey(value) {
  if (value) sessionStorage.setItem(KEY, value);
  else { sessionStorage.removeItem(KEY); setAdmin(false); }
  asked = null;
}

/** `GET /v1/me` (who the key is, what the server offers), asked once per
 * key and page load. */
export function me() {
  if (!asked) asked = get("/v1/me").catch((e) => { asked = null; throw e; });
  return asked;
}

/** An API error: HTTP status plus the stable `code`, message and `field`. */
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field || null;
  }
}

/** Call the API; resolves to the JSON body (null for 204), throws ApiError. */
export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${key()}` };
  const ws = isAdmin() && opened();
  if (ws && !path.startsWith("/v1/workspaces")) headers["X-Rtc-Workspace"] = ws.id;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let resp;
  try {
    resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(0, "network", `The server could not be reached: ${e.message}`);
  }
  if (resp.status === 204) return null;
  const text = await resp.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!resp.ok) {
    const e = (json && json.error) || {};
    throw new ApiError(resp.status, e.code || `http_${resp.status}`, e.message || text || resp.statusText, e.field);
  }
  return json;
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body ?? {});
export const put = (path, body) => api("PUT", path, body);
export const del = (path) => api("DELETE", path);

/** All items of a list endpoint (`{data: [...]}`). */
export async function list(path) {
  const body = await get(path);
  return (body && body.data) || [];
}
