//! Dynamic variables of a session (R-DV-1..4): initial values, the
//! platform's `system__*` values, and typed updates that emit
//! `state.updated`.

use std::collections::BTreeMap;

use rtc_core::ValidationError;
use rtc_core::names::SYSTEM_PREFIX;
use rtc_core::time::rfc3339_from_millis;
use rtc_expr::{LlmLeafEvaluator, evaluate, value_fits};
use rtc_protocol::{Assistant, EventBody, RunMode, StateUpdated, UpdateStateRule};
use rtc_store::{SessionUpdate, now_millis};
use serde_json::{Map, Value, json};

use crate::RuntimeError;
use crate::context::SessionCtx;
use crate::limits::{SessionLimits, variable_size, variables_size};

/// Identity of a new session, for its `system__*` variables.
pub struct SystemInfo<'a> {
    pub session_id: &'a str,
    pub root_id: &'a str,
    pub parent_id: Option<&'a str>,
    pub assistant_id: &'a str,
    pub user_id: Option<&'a str>,
    pub run_mode: RunMode,
}

/// Declared defaults, overridden by the values given at start, plus the
/// system variables.
pub fn initial_variables(
    assistant: &Assistant,
    given: &BTreeMap<String, Value>,
    sys: &SystemInfo<'_>,
) -> Result<Map<String, Value>, ValidationError> {
    let mut vars = Map::new();
    for v in &assistant.dynamic_variables {
        vars.insert(v.name.clone(), v.default.clone().unwrap_or(Value::Null));
    }
    for (name, value) in given {
        let field = format!("dynamicVariables.{name}");
        if name.starts_with(SYSTEM_PREFIX) {
            return Err(ValidationError::new(
                "read_only_variable",
                field,
                format!("`{name}` is a platform variable and cannot be set"),
            ));
        }
        let Some(declared) = assistant.dynamic_variables.iter().find(|v| &v.name == name) else {
            return Err(ValidationError::new(
                "unknown_variable",
                field,
                format!("the assistant declares no variable `{name}`"),
            ));
        };
        if !value_fits(value, declared.value_type) {
            return Err(ValidationError::new(
                "invalid_value",
                field,
                format!("`{name}` must be a {}", declared.value_type),
            ));
        }
        vars.insert(name.clone(), value.clone());
    }
    vars.insert("system__session_id".into(), json!(sys.session_id));
    vars.insert("system__root_session_id".into(), json!(sys.root_id));
    vars.insert(
        "system__parent_session_id".into(),
        sys.parent_id.map_or(Value::Null, |p| json!(p)),
    );
    vars.insert("system__assistant_id".into(), json!(sys.assistant_id));
    vars.insert(
        "system__user_id".into(),
        sys.user_id.map_or(Value::Null, |u| json!(u)),
    );
    vars.insert(
        "system__time_utc".into(),
        json!(rfc3339_from_millis(now_millis())),
    );
    vars.insert("system__turn_count".into(), json!(0));
    vars.insert("system__run_mode".into(), json!(sys.run_mode.as_str()));
    Ok(vars)
}

/// What an update did.
#[derive(Debug, Default)]
pub struct Applied {
    /// The changes made, by variable.
    pub changes: Map<String, Value>,
    /// What could not be set, and why.
    pub problems: Vec<String>,
    /// Bytes of the snapshot of every variable the update recorded (in its
    /// `state.updated` and in the session row); 0 when nothing changed.
    pub snapshot_bytes: usize,
}

/// Apply changes to declared variables, record them with one
/// `state.updated`. Values of the wrong type, or past the size bounds
/// (`value_too_large`, `variables_too_large`), are skipped and reported.
pub async fn apply(
    ctx: &SessionCtx,
    limits: &SessionLimits,
    changes: Vec<(String, Value)>,
    source: &str,
) -> Result<Applied, RuntimeError> {
    let mut applied = Map::new();
    let mut problems = Vec::new();
    let (snapshot, total) = {
        let mut state = ctx.state.lock().await;
        let mut total = variables_size(&state.variables);
        for (name, value) in changes {
            let declared = ctx
                .config
                .assistant
                .dynamic_variables
                .iter()
                .find(|v| v.name == name);
            match declared {
                Some(d) if value_fits(&value, d.value_type) => {
                    let old = state.variables.get(&name);
                    if old == Some(&value) {
                        continue;
                    }
                    if let Some(p) = limits.value_problem(&name, &value) {
                        problems.push(p.message);
                        continue;
                    }
                    let after = total + variable_size(&name, &value)
                        - old.map_or(0, |o| variable_size(&name, o));
                    if let Some(p) = limits.total_problem(&name, after) {
                        problems.push(p.message);
                        continue;
                    }
                    total = after;
                    state.variables.insert(name.clone(), value.clone());
                    applied.insert(name, value);
                }
                Some(d) => problems.push(format!(
                    "`{name}` must be a {}, got {value:.200}",
                    d.value_type
                )),
                None => problems.push(format!("`{name}` is not a declared variable")),
            }
        }
        (state.variables.clone(), total)
    };
    if applied.is_empty() {
        return Ok(Applied {
            problems,
            ..Applied::default()
        });
    }
    let event = StateUpdated {
        changes: applied.clone(),
        variables: snapshot.clone(),
        source: source.to_owned(),
    };
    let update = SessionUpdate {
        variables: Some(snapshot),
        ..SessionUpdate::default()
    };
    ctx.events.emit_with(vec![event.into()], update).await?;
    Ok(Applied {
        changes: applied,
        problems,
        snapshot_bytes: total,
    })
}

/// Evaluate update rules in order (each sees the values the earlier ones
/// set), apply the results with one `state.updated`, and report what could
/// not be set as one `update_state_failed` error event; the problems are
/// the rules' and the update's.
pub async fn apply_rules<L: LlmLeafEvaluator>(
    ctx: &SessionCtx,
    limits: &SessionLimits,
    rules: &[UpdateStateRule],
    leaf: &L,
    source: &str,
) -> Result<Applied, RuntimeError> {
    let mut vars: BTreeMap<String, Value> = ctx
        .state
        .lock()
        .await
        .variables
        .clone()
        .into_iter()
        .collect();
    let mut changes = Vec::new();
    let mut errors = Vec::new();
    let eval = limits.eval();
    // Rules beyond the bound (a configuration from before it) do not run.
    for rule in rules.iter().take(limits.update.max_rules) {
        match evaluate(&rule.expression, &vars, leaf, &eval).await {
            // A value past the bound is not handed to later rules either.
            Ok(v) => match limits.value_problem(&rule.variable, &v) {
                Some(p) => errors.push(format!("`{}` unchanged: {}", rule.variable, p.message)),
                None => {
                    vars.insert(rule.variable.clone(), v.clone());
                    changes.push((rule.variable.clone(), v));
                }
            },
            Err(e) => errors.push(format!("`{}` unchanged: {e}", rule.variable)),
        }
    }
    let mut applied = apply(ctx, limits, changes, source).await?;
    errors.append(&mut applied.problems);
    if !errors.is_empty() {
        ctx.events
            .emit(EventBody::error("update_state_failed", errors.join("; ")))
            .await?;
    }
    applied.problems = errors;
    Ok(applied)
}

/// Update the platform's own variables at the start of a turn; returns
/// all values and the changed ones, for the caller to record.
pub async fn begin_turn(ctx: &SessionCtx) -> (Map<String, Value>, Map<String, Value>) {
    let snapshot = {
        let mut state = ctx.state.lock().await;
        let count = state
            .variables
            .get("system__turn_count")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            + 1;
        state
            .variables
            .insert("system__turn_count".into(), json!(count));
        state.variables.insert(
            "system__time_utc".into(),
            json!(rfc3339_from_millis(now_millis())),
        );
        state.variables.clone()
    };
    let changes = ["system__turn_count", "system__time_utc"]
        .into_iter()
        .filter_map(|k| Some((k.to_owned(), snapshot.get(k)?.clone())))
        .collect();
    (snapshot, changes)
}
