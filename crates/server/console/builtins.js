// The platform built-in tools (endConversation, updateState, skipTurn,
// requestHumanHandoff): one config form per tool, shared by the
// assistant's built-ins, the workflow's global ones and a workflow
// stage's patch (inherit / set / disable), plus updateState rules written
// with the expression editor.

import { h, field, text, select, checkbox } from "./ui.js";
import { exprField } from "./expr.js";

export const BUILT_INS = [
  ["endConversation", "endConversation: the model may end the conversation"],
  ["skipTurn", "skipTurn: the model may stay silent"],
  ["requestHumanHandoff", "requestHumanHandoff: hand over to a human agent"],
  ["updateState", "updateState: the model may update variables by rules"],
];

/**
 * Rules `[{variable, expression}]`, each a variable and an expression.
 * `variables()` gives the declared variables ({name, type}).
 */
export function rulesEditor(rules, { variables, allowLlm, path }) {
  const box = h("div", { class: "rules" });
  const list = h("div");
  let items = (rules || []).map((r) => ({ variable: r.variable, expression: r.expression }));
  const draw = () => {
    list.replaceChildren(...items.map((r, i) => {
      const names = variables().map((v) => v.name);
      if (r.variable && !names.includes(r.variable)) names.push(r.variable);
      const variable = select(names.map((n) => [n, n]), r.variable || names[0], { "aria-label": `Variable of rule ${i + 1}` });
      const expr = exprField(`Rule ${i + 1}: new value`, `${path}[${i}].expression`, r.expression, { variables, allowLlm });
      const row = h("div", { class: "rule" },
        field(`Rule ${i + 1}: variable`, `${path}[${i}].variable`, variable), expr,
        h("button", { type: "button", class: "link", onclick: () => { snapshot(); items.splice(i, 1); draw(); } }, `Remove rule ${i + 1}`));
      row.raw = () => ({ variable: variable.value, expression: expr.input.value });
      row.read = () => ({ variable: variable.value, expression: expr.read() });
      return row;
    }));
  };
  // Keep what was typed (as text) when rows are redrawn.
  const snapshot = () => { items = [...list.children].map((r) => r.raw()); };
  draw();
  box.append(list, h("button", { type: "button", class: "ghost small", onclick: () => { snapshot(); items.push({ variable: variables()[0]?.name || "", expression: "" }); draw(); } }, "Add rule"));
  box.read = () => [...list.children].map((r) => r.read());
  return box;
}

/** The config form of one built-in; `read()` gives its config object. */
export function builtInForm(name, config, { variables, path, allowLlm = true }) {
  const c = config || {};
  const description = text(c.description || "", { placeholder: "When the model should call it" });
  const describe = field("When to call it", `${path}.description`, description);
  const box = h("div", { class: "options" });
  let read;
  switch (name) {
    case "endConversation": {
      const messageType = select([["generated", "the model says goodbye"], ["custom", "say a fixed message"], ["none", "end silently"]], c.messageType || "generated");
      const customMessage = text(c.customMessage || "");
      const [reasonLabel, reason] = checkbox("Ask the model for a reason", !!c.captureReason);
      const [interLabel, inter] = checkbox("The user may interrupt the goodbye", c.allowEndInterruption !== false);
      box.append(describe, h("div", { class: "row" }, field("Goodbye", `${path}.messageType`, messageType), field("Fixed message", `${path}.customMessage`, customMessage)), reasonLabel, interLabel);
      read = () => ({ description: description.value, messageType: messageType.value, customMessage: customMessage.value, captureReason: reason.checked, allowEndInterruption: inter.checked });
      break;
    }
    case "requestHumanHandoff": {
      const message = text(c.message || "", { placeholder: "Connecting you to a colleague…" });
      box.append(describe, field("Message while handing over", `${path}.message`, message));
      read = () => ({ description: description.value, ...(message.value ? { message: message.value } : {}) });
      break;
    }
    case "updateState": {
      const rules = rulesEditor(c.rules || [], { variables, allowLlm, path: `${path}.rules` });
      box.append(describe, h("div", { class: "field", dataset: { field: `${path}.rules` } }, h("span", { class: "label" }, "Rules"), rules, h("p", { class: "error" })));
      read = () => ({ description: description.value, rules: rules.read() });
      break;
    }
    default:
      box.append(describe);
      read = () => ({ description: description.value });
  }
  box.read = () => {
    const out = read();
    if (!out.description) delete out.description;
    return out;
  };
  return box;
}

/** Built-ins on or off with their options (assistants, a workflow's globals). */
export function builtInsSection(b, { variables, path = "builtInTools" }) {
  const parts = BUILT_INS.map(([name, label]) => {
    const [boxLabel, on] = checkbox(label, !!b?.[name]);
    const form = builtInForm(name, b?.[name], { variables, path: `${path}.${name}` });
    const sync = () => { form.hidden = !on.checked; };
    on.addEventListener("change", sync);
    sync();
    return [name, on, form, h("div", { dataset: { path: `${path}.${name}` } }, boxLabel, form)];
  });
  const section = h("fieldset", { class: "card" }, h("legend", {}, "Platform built-in tools"), parts.map((p) => p[3]));
  section.read = () => Object.fromEntries(parts.filter(([, on]) => on.checked).map(([name, , form]) => [name, form.read()]));
  return section;
}

/**
 * A stage's patch over the workflow's built-ins: per tool inherit (key
 * absent), set (an object) or disable (`null`). `globals()` gives the
 * workflow's built-ins, to start a "set" from.
 */
export function builtInsPatch(patch, { variables, path, globals }) {
  const parts = BUILT_INS.map(([name]) => {
    const has = patch && Object.prototype.hasOwnProperty.call(patch, name);
    const mode = !has ? "inherit" : patch[name] === null ? "disable" : "set";
    const choice = select([["inherit", "inherit the workflow's"], ["set", "set for this stage"], ["disable", "disable in this stage"]], mode,
      { "aria-label": `${name} in this stage` });
    const slot = h("div");
    let form = null;
    const sync = () => {
      if (choice.value === "set") {
        form = form || builtInForm(name, mode === "set" ? patch[name] : globals()?.[name], { variables, path: `${path}.${name}` });
        slot.replaceChildren(form);
      } else {
        slot.replaceChildren(choice.value === "inherit" ? h("p", { class: "hint" }, globals()?.[name] ? "on, as the workflow sets it" : "off (the workflow does not set it)") : h("p", { class: "hint" }, "off in this stage"));
      }
    };
    choice.addEventListener("change", sync);
    sync();
    return [name, choice, () => form, h("div", { class: "field", dataset: { field: `${path}.${name}` } },
      h("div", { class: "source" }, h("span", { class: "name" }, name), choice), slot, h("p", { class: "error" }))];
  });
  const section = h("fieldset", { class: "field" }, h("legend", {}, "Built-in tools in this stage"), parts.map((p) => p[3]));
  section.read = () => {
    const out = {};
    for (const [name, choice, form] of parts) {
      if (choice.value === "disable") out[name] = null;
      else if (choice.value === "set") out[name] = form().read();
    }
    return out;
  };
  return section;
}
