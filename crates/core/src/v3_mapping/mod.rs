//! The v3 → v4 mapping of the Tool Resource v4 migration (design §7),
//! without IO: a v3 export's documents (as JSON values) become v4 tools,
//! assistants and workflows, plus the problems that make an item
//! unmappable (`{resource, path, code}`) and warnings (dropped references).
//!
//! v3 kept the platform built-ins as `system` tool resources referenced by
//! id; v4 has `builtInTools` and `toolBindings`. Validation of the results
//! with the v4 rules is the caller's next step.

mod builtins;
mod edges;
mod expr;
mod workflow;

use std::collections::BTreeMap;

use rtc_protocol::{Assistant, Tool, Workflow};
use serde_json::{Map, Value};

use builtins::{BindingUse, SystemTool, binding_for};

/// Why one item cannot be migrated as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `kind/id`, e.g. `workflow/wf_orders`.
    pub resource: String,
    /// Where in the document, `/`-separated (e.g. `nodes/lookup/tools/0/params/order_id`).
    pub path: String,
    /// Stable code, e.g. `missing_required_param`.
    pub code: &'static str,
    pub message: String,
}

/// Something the migration changed on its own (a dropped reference).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub resource: String,
    pub path: String,
    pub message: String,
}

/// The documents of one workspace's v3 export.
#[derive(Debug, Clone, Default)]
pub struct V3Export {
    pub tools: Vec<Value>,
    pub assistants: Vec<Value>,
    pub workflows: Vec<Value>,
}

/// What the export becomes.
#[derive(Debug, Clone, Default)]
pub struct Migrated {
    /// The non-system tools, as v4 tools (with their ids).
    pub tools: Vec<Tool>,
    pub assistants: Vec<Assistant>,
    pub workflows: Vec<Workflow>,
    /// Ids of the `system` tools, which become built-ins and are not kept.
    pub system_tools: Vec<String>,
    pub problems: Vec<Problem>,
    pub warnings: Vec<Warning>,
}

/// Problems and warnings of one resource.
pub(crate) struct Report {
    resource: String,
    pub(crate) problems: Vec<Problem>,
    pub(crate) warnings: Vec<Warning>,
}

impl Report {
    fn new(kind: &str, id: &str) -> Self {
        Self {
            resource: format!("{kind}/{id}"),
            problems: Vec::new(),
            warnings: Vec::new(),
        }
    }

    pub(crate) fn problem(
        &mut self,
        path: impl Into<String>,
        code: &'static str,
        message: impl Into<String>,
    ) {
        self.problems.push(Problem {
            resource: self.resource.clone(),
            path: path.into(),
            code,
            message: message.into(),
        });
    }

    pub(crate) fn warn(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.warnings.push(Warning {
            resource: self.resource.clone(),
            path: path.into(),
            message: message.into(),
        });
    }

    fn into_parts(self, out: &mut Migrated) {
        out.problems.extend(self.problems);
        out.warnings.extend(self.warnings);
    }
}

/// The tools a v3 document may reference: `system` ones and the rest.
pub(crate) struct Catalog {
    pub(crate) system: BTreeMap<String, SystemTool>,
    pub(crate) tools: BTreeMap<String, Tool>,
}

/// A reference resolved against the catalog.
pub(crate) enum Resolved<'a> {
    System(&'a SystemTool),
    Tool(&'a Tool),
    Missing,
}

impl Catalog {
    pub(crate) fn resolve(&self, id: &str) -> Resolved<'_> {
        if let Some(s) = self.system.get(id) {
            Resolved::System(s)
        } else if let Some(t) = self.tools.get(id) {
            Resolved::Tool(t)
        } else {
            Resolved::Missing
        }
    }
}

/// `path/segment`, or `segment` at the top.
pub(crate) fn join(path: &str, segment: impl std::fmt::Display) -> String {
    if path.is_empty() {
        segment.to_string()
    } else {
        format!("{path}/{segment}")
    }
}

fn id_of(doc: &Value) -> String {
    doc.get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Map a workspace's v3 export. `existing` are the workspace's v4 tools
/// (v3 documents may reference them too).
pub fn migrate_export(export: &V3Export, existing: &BTreeMap<String, Tool>) -> Migrated {
    let mut out = Migrated::default();
    let mut catalog = Catalog {
        system: BTreeMap::new(),
        tools: existing.clone(),
    };
    for doc in &export.tools {
        let id = id_of(doc);
        let mut report = Report::new("tool", &id);
        if doc.get("type").and_then(Value::as_str) == Some("system") {
            match SystemTool::parse(doc) {
                Ok(s) => {
                    out.system_tools.push(id.clone());
                    catalog.system.insert(id, s);
                }
                Err((path, message)) => report.problem(path, "invalid_system_tool", message),
            }
        } else {
            match serde_json::from_value::<Tool>(doc.clone()) {
                Ok(tool) => {
                    catalog.tools.insert(id, tool.clone());
                    out.tools.push(tool);
                }
                Err(e) => report.problem("", "invalid_tool", e.to_string()),
            }
        }
        report.into_parts(&mut out);
    }
    for doc in &export.assistants {
        let mut report = Report::new("assistant", &id_of(doc));
        if let Some(a) = assistant(doc, &catalog, &mut report) {
            out.assistants.push(a);
        }
        report.into_parts(&mut out);
    }
    for doc in &export.workflows {
        let mut report = Report::new("workflow", &id_of(doc));
        if let Some(w) = workflow::workflow(doc, &catalog, &mut report) {
            out.workflows.push(w);
        }
        report.into_parts(&mut out);
    }
    out
}

/// The ids of `list` (`toolIds`, `globalToolIds`) with their paths.
pub(crate) fn tool_refs(
    doc: &Map<String, Value>,
    key: &str,
    report: &mut Report,
) -> Vec<(String, String)> {
    match doc.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| match v.as_str() {
                Some(id) => Some((join(key, i), id.to_owned())),
                None => {
                    report.problem(join(key, i), "invalid_field", "a tool id must be a string");
                    None
                }
            })
            .collect(),
        Some(_) => {
            report.problem(key, "invalid_field", "must be an array of tool ids");
            Vec::new()
        }
    }
}

fn assistant(doc: &Value, catalog: &Catalog, report: &mut Report) -> Option<Assistant> {
    let Some(map) = doc.as_object() else {
        report.problem("", "invalid_assistant", "an assistant must be an object");
        return None;
    };
    let refs = tool_refs(map, "toolIds", report);
    let mut rest = map.clone();
    rest.remove("toolIds");
    rest.remove("specVersion");
    let mut assistant: Assistant = match serde_json::from_value(Value::Object(rest)) {
        Ok(a) => a,
        Err(e) => {
            report.problem("", "invalid_assistant", e.to_string());
            return None;
        }
    };
    let variables = assistant.dynamic_variables.clone();
    for (path, id) in refs {
        match catalog.resolve(&id) {
            Resolved::System(system) => {
                let placed = system.built_in(None, &variables, &path, report);
                if let Some(placed) = placed {
                    placed.apply_to(&mut assistant.built_in_tools);
                }
            }
            Resolved::Tool(tool) => {
                if let Some(b) =
                    binding_for(&id, tool, None, None, BindingUse::Model, &path, report)
                {
                    assistant.tool_bindings.push(b);
                }
            }
            Resolved::Missing => report.warn(
                path,
                format!("tool `{id}` no longer exists; the reference is dropped"),
            ),
        }
    }
    Some(assistant)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
