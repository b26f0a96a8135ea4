// The declared dynamic variables of an assistant or a workflow: name,
// type, default and description, one row each.

import { h, field, text, select, rows, literalText, readLiteral, stringText, readString } from "./ui.js";

/** A default as its box shows it: a string variable's as typed (an empty
 * box means no default), others as JSON. */
function defaultText(v) {
  if (v.default === undefined) return "";
  return v.type === "string" && typeof v.default === "string" ? stringText(v.default) : literalText(v.default);
}

/** The rows editor; `readVariables(box)` gives `dynamicVariables`. */
export function variableRows(vars) {
  return rows({
    items: vars,
    blank: () => ({ name: "", type: "string", description: "" }),
    addLabel: "Add variable",
    render: (v, i) => h("div", { class: "listrow" },
      field("Name", `dynamicVariables[${i}].name`, text(v.name, { class: "n", placeholder: "customer_name" })),
      field("Type", `dynamicVariables[${i}].type`, select(["string", "number", "boolean", "json"], v.type, { class: "t" })),
      field("Default", `dynamicVariables[${i}].default`, text(defaultText(v), { class: "dv", placeholder: "none (required at start)" })),
      field("Description", `dynamicVariables[${i}].description`, text(v.description || "", { class: "ds" }))),
  });
}

export function readVariables(box) {
  return box.rows().map((r) => {
    const v = { name: r.querySelector(".n").value.trim(), type: r.querySelector(".t").value };
    const description = r.querySelector(".ds").value.trim();
    if (description) v.description = description;
    const d = r.querySelector(".dv").value.trim();
    if (d) v.default = v.type === "string" ? readString(d) : readLiteral(d);
    return v;
  });
}
