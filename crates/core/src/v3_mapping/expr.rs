//! v3 expression ASTs to v4 (design §7, "AST renames"): `X_operator` → `X`
//! (`neq` → `ne`, `gte` → `ge`, `lte` → `le`), `children` → `args`,
//! `dynamic_variable` → `variable`, `*_literal` → `constant`.

use rtc_protocol::Expr;
use serde_json::{Map, Value};

/// The v4 name of a v3 node type.
fn v4_type(v3: &str) -> String {
    if v3 == "dynamic_variable" {
        return "variable".to_owned();
    }
    if v3.ends_with("_literal") {
        return "constant".to_owned();
    }
    match v3.strip_suffix("_operator") {
        Some("neq") => "ne".to_owned(),
        Some("gte") => "ge".to_owned(),
        Some("lte") => "le".to_owned(),
        Some(op) => op.to_owned(),
        None => v3.to_owned(),
    }
}

const CHILD_KEYS: [&str; 6] = ["left", "right", "cond", "then", "else", "arg"];

/// The v4 JSON of a v3 expression; `Err` names the path (below `path`) of
/// a node that is not an object with a string `type`.
pub(crate) fn rename(v3: &Value, path: &str) -> Result<Value, String> {
    let Some(obj) = v3.as_object() else {
        return Err(path.to_owned());
    };
    let Some(ty) = obj.get("type").and_then(Value::as_str) else {
        return Err(path.to_owned());
    };
    let mut out = Map::new();
    out.insert("type".into(), Value::String(v4_type(ty)));
    for (key, value) in obj.iter().filter(|(k, _)| k.as_str() != "type") {
        let key = match key.as_str() {
            "children" => "args",
            "child" | "operand" => "arg",
            k => k,
        };
        let at = super::join(path, key);
        let mapped = if key == "args" {
            let Some(items) = value.as_array() else {
                return Err(at);
            };
            Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| rename(v, &super::join(&at, i)))
                    .collect::<Result<_, _>>()?,
            )
        } else if CHILD_KEYS.contains(&key) {
            rename(value, &at)?
        } else {
            value.clone()
        };
        out.insert(key.to_owned(), mapped);
    }
    // v3 `not_operator` may hold its operand in `children`.
    if out.get("type").and_then(Value::as_str) == Some("not")
        && !out.contains_key("arg")
        && let Some(Value::Array(mut args)) = out.remove("args")
        && args.len() == 1
    {
        out.insert("arg".into(), args.remove(0));
    }
    Ok(Value::Object(out))
}

/// Whether an `llm` leaf occurs anywhere in a v4 expression.
pub(crate) fn has_llm_leaf(e: &Expr) -> bool {
    match e {
        Expr::Llm { .. } => true,
        Expr::Constant { .. } | Expr::Variable { .. } => false,
        Expr::If {
            cond,
            then,
            otherwise,
        } => has_llm_leaf(cond) || has_llm_leaf(then) || has_llm_leaf(otherwise),
        Expr::And { args } | Expr::Or { args } | Expr::Concat { args } => {
            args.iter().any(has_llm_leaf)
        }
        Expr::Not { arg } => has_llm_leaf(arg),
        Expr::Eq { left, right }
        | Expr::Ne { left, right }
        | Expr::Lt { left, right }
        | Expr::Le { left, right }
        | Expr::Gt { left, right }
        | Expr::Ge { left, right }
        | Expr::Add { left, right }
        | Expr::Sub { left, right }
        | Expr::Mul { left, right }
        | Expr::Div { left, right }
        | Expr::Mod { left, right } => has_llm_leaf(left) || has_llm_leaf(right),
    }
}

/// A v3 expression as a v4 [`Expr`], or the path and message of why not.
pub(crate) fn expression(v3: &Value, path: &str) -> Result<Expr, (String, String)> {
    let v4 = rename(v3, path).map_err(|at| {
        (
            at,
            "an expression node must be an object with a `type`".to_owned(),
        )
    })?;
    serde_json::from_value(v4)
        .map_err(|e| (path.to_owned(), format!("not a valid expression: {e}")))
}
