// The declared dynamic variables of an assistant or a workflow: name,
// type, default and description, one row each.

import { h, field, text, select, rows } from "./ui.js";

/** The rows editor; `readVariables(box)` gives `dynamicVariables`. */
export function variableRows(vars) {
  return rows({
    items: vars,
    blank: () => ({ name: "", type: "string", description: "" }),
    addLabel: "Add variable",
    render: (v, i) => h("div", { class: "listrow" },
      field("Name", `dynamicVariables[${i}].name`, text(v.name, { class: "n", placeholder: "customer_name" })),
      field("Type", `dynamicVariables[${i}].type`, select(["string", "number", "boolean", "json"], v.type, { class: "t" })),
      field("Default", `dynamicVariables[${i}].default`, text(v.default === undefined ? "" : JSON.stringify(v.default), { class: "dv", placeholder: "none (required at start)" })),
      field("Description", `dynamicVariables[${i}].description`, text(v.description || "", { class: "ds" }))),
  });
}

export function readVariables(box) {
  return box.rows().map((r) => {
    const v = { name: r.querySelector(".n").value.trim(), type: r.querySelector(".t").value };
    const description = r.querySelector(".ds").value.trim();
    if (description) v.description = description;
    const d = r.querySelector(".dv").value.trim();
    if (d) {
      try { v.default = JSON.parse(d); } catch { v.default = d; }
    }
    return v;
  });
}
