//! Reading a workflow document (design §4, first two codes): the version
//! gate on the raw JSON (`unsupported_spec_version`, pointing to the
//! migration), then the strict v4 shape, where an unknown field
//! (`unknown_field`, e.g. v3's `toolIds` or a node's `tools`) or a
//! malformed one (`invalid_field`) is named by its path.
//!
//! serde reads the internally tagged parts (nodes, conditions, sources,
//! expressions) from a buffer whose errors carry no path below the tagged
//! value; a node is therefore read again as its own type to find the field,
//! and an unknown key is found as the object that holds it among the keys
//! serde expected there.

use rtc_protocol::{
    ActionNode, AgentNode, EndNode, TransferNode, UpdateStateNode, WORKFLOW_SPEC_VERSION, Workflow,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Rule, ValidationError};

/// The message of `unsupported_spec_version`: where earlier formats go.
pub const MIGRATION_HINT: &str = "earlier formats are brought to version 4 with `rtc-agent import-v3 FILE --workspace ID` followed by `rtc-agent migrate --backup PATH`";

/// Read a workflow body: `specVersion` must be the number 4, then the
/// document must have the v4 shape exactly.
pub fn parse_workflow(value: &Value) -> Rule<Workflow> {
    check_spec_version(value)?;
    let w = serde_path_to_error::deserialize::<_, Workflow>(value).map_err(|e| {
        let (path, message) = refine(value, e.path().to_string(), e.inner().to_string());
        shape_error(value, path, &message)
    })?;
    check_bare_variants(value)?;
    Ok(w)
}

/// `specVersion` is the number 4 (not missing, not `3`, not `"4"`).
pub fn check_spec_version(value: &Value) -> Rule {
    let version = value.get("specVersion");
    if version.and_then(Value::as_u64) == Some(u64::from(WORKFLOW_SPEC_VERSION)) {
        return Ok(());
    }
    let got = match version {
        None => "no `specVersion`".to_owned(),
        Some(v) => format!("`specVersion: {v}`"),
    };
    Err(ValidationError::new(
        "unsupported_spec_version",
        "specVersion",
        format!(
            "only `specVersion: {WORKFLOW_SPEC_VERSION}` is accepted, the document has {got}; {MIGRATION_HINT}"
        ),
    ))
}

/// serde reads a variant without fields (`{"type": "human"}`,
/// `{"type": "always"}`, `{"source": "model"}`) from an object with any
/// other keys too; the v4 shape has none.
fn check_bare_variants(value: &Value) -> Rule {
    // (path, object, its tag key)
    let mut bare: Vec<(String, &Value, &str)> = Vec::new();
    let mut bindings = vec![];
    for (j, b) in items(value, "toolBindings").enumerate() {
        bindings.push((format!("toolBindings[{j}]"), b));
    }
    for (i, node) in items(value, "nodes").enumerate() {
        if let Some(target) = node.get("target") {
            bare.push((format!("nodes[{i}].target"), target, "type"));
        }
        if let Some(b) = node.get("binding") {
            bindings.push((format!("nodes[{i}].binding"), b));
        }
        for (j, b) in items(node, "toolBindings").enumerate() {
            bindings.push((format!("nodes[{i}].toolBindings[{j}]"), b));
        }
    }
    for (at, b) in bindings {
        for group in ["argumentBindings", "templateBindings"] {
            for (arg, source) in b
                .get(group)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                bare.push((format!("{at}.{group}.{arg}"), source, "source"));
            }
        }
    }
    for (i, edge) in items(value, "edges").enumerate() {
        if let Some(c) = edge.get("condition") {
            bare.push((format!("edges[{i}].condition"), c, "type"));
        }
    }
    for (at, v, tag) in bare {
        let Some(map) = v.as_object() else { continue };
        let kind = map.get(tag).and_then(Value::as_str).unwrap_or_default();
        if !matches!(kind, "human" | "always" | "model") {
            continue;
        }
        if let Some(extra) = map.keys().find(|k| *k != tag) {
            let field = format!("{at}.{extra}");
            return Err(ValidationError::new(
                "unknown_field",
                field.clone(),
                format!(
                    "`{field}` is not a field of a version 4 workflow (`{tag}: {kind}` has no other fields)"
                ),
            ));
        }
    }
    Ok(())
}

/// The items of the array at `key` of `v` (none when it is not one).
fn items<'v>(v: &'v Value, key: &str) -> impl Iterator<Item = &'v Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// A node's error found inside the node: serde's path stops at `nodes[i]`.
fn refine(root: &Value, path: String, message: String) -> (String, String) {
    let Some(node) = node_index(&path).and_then(|i| root.pointer(&format!("/nodes/{i}"))) else {
        return (path, message);
    };
    let mut fields = node.clone();
    let kind = fields
        .as_object_mut()
        .and_then(|m| m.remove("type"))
        .and_then(|t| t.as_str().map(str::to_owned));
    let inner = match kind.as_deref() {
        Some("agent") => inner_error::<AgentNode>(&fields),
        Some("action") => inner_error::<ActionNode>(&fields),
        Some("updateState") => inner_error::<UpdateStateNode>(&fields),
        Some("transfer") => inner_error::<TransferNode>(&fields),
        Some("end") => inner_error::<EndNode>(&fields),
        _ => None,
    };
    match inner {
        Some((sub, m)) if sub.is_empty() || sub == "." => (path, m),
        Some((sub, m)) => (format!("{path}.{sub}"), m),
        None => (path, message),
    }
}

/// `Some(i)` when `path` is exactly `nodes[i]`.
fn node_index(path: &str) -> Option<usize> {
    path.strip_prefix("nodes[")?.strip_suffix(']')?.parse().ok()
}

fn inner_error<T: DeserializeOwned>(fields: &Value) -> Option<(String, String)> {
    serde_path_to_error::deserialize::<_, T>(fields)
        .err()
        .map(|e| (e.path().to_string(), e.inner().to_string()))
}

fn shape_error(root: &Value, mut path: String, message: &str) -> ValidationError {
    if path == "." {
        path.clear();
    }
    if let Some(key) = quoted_after(message, "unknown field `") {
        let field = locate_unknown(root, &path, &key, &expected_names(message));
        return ValidationError::new(
            "unknown_field",
            field.clone(),
            format!("`{field}` is not a field of a version 4 workflow ({message})"),
        );
    }
    // Name the missing field itself, not its parent.
    if let Some(name) = quoted_after(message, "missing field `") {
        path = join(&path, &name);
    }
    let text = if path.is_empty() {
        message.to_owned()
    } else {
        format!("`{path}`: {message}")
    };
    ValidationError::new("invalid_field", path, text)
}

/// The text between `prefix` and the next backtick.
fn quoted_after(message: &str, prefix: &str) -> Option<String> {
    let rest = message.strip_prefix(prefix)?;
    rest.split('`').next().map(str::to_owned)
}

/// The field names serde listed as expected (`expected one of `a`, `b``).
fn expected_names(message: &str) -> Vec<String> {
    let Some((_, list)) = message.split_once("expected") else {
        return Vec::new();
    };
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The path of the unknown `key` below `path`: the shallowest object there
/// holding `key` whose other keys are all ones serde expected (or a tag).
fn locate_unknown(root: &Value, path: &str, key: &str, expected: &[String]) -> String {
    let fits = |v: &Value| {
        v.as_object().is_some_and(|map| {
            map.contains_key(key)
                && map.keys().all(|k| {
                    k == key || k == "type" || k == "source" || expected.iter().any(|e| e == k)
                })
        })
    };
    let at = |p: &str| pointer_of(p).and_then(|p| root.pointer(&p));
    // serde's path already names the key where it could follow the keys.
    let (parent, last) = match path.rsplit_once('.') {
        Some((parent, last)) => (parent, last),
        None => ("", path),
    };
    if last == key && at(parent).is_some_and(fits) {
        return path.to_owned();
    }
    let Some(start) = at(path) else {
        return join(path, key);
    };
    let mut queue = std::collections::VecDeque::from([(path.to_owned(), start)]);
    while let Some((here, v)) = queue.pop_front() {
        if fits(v) {
            return join(&here, key);
        }
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    queue.push_back((join(&here, k), child));
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    queue.push_back((format!("{here}[{i}]"), child));
                }
            }
            _ => {}
        }
    }
    join(path, key)
}

/// A field path (`nodes[1].binding`) as a JSON pointer (`/nodes/1/binding`).
fn pointer_of(path: &str) -> Option<String> {
    let mut out = String::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, indexes) = match part.find('[') {
            Some(at) => part.split_at(at),
            None => (part, ""),
        };
        if !name.is_empty() {
            out.push('/');
            out.push_str(&name.replace('~', "~0").replace('/', "~1"));
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            out.push('/');
            out.push_str(index.strip_suffix(']')?);
        }
    }
    Some(out)
}

#[cfg(test)]
#[path = "workflow_parse_tests.rs"]
mod tests;
