//! The edges of a v3 workflow in v4 form: their order (`edgeOrder`, else
//! key order), the conditions (`forwardCondition` → `condition`, a missing
//! one `always`, `successful` → `success`, a lone `llm` leaf an `llm`
//! edge) and the edges inside a chain of actions.

use rtc_protocol::{ActionNode, EdgeCondition, Expr, NodeKind, WorkflowEdge};
use serde_json::{Map, Value};

use super::expr::{expression, has_llm_leaf};
use super::{Report, join};

/// One v3 edge, in v4 order.
pub(crate) struct V3Edge<'a> {
    pub(crate) id: String,
    pub(crate) source: String,
    pub(crate) target: String,
    pub(crate) forward: Option<&'a Value>,
    pub(crate) backward: Option<&'a Value>,
}

pub(crate) fn is_failure(c: Option<&Value>) -> bool {
    c.is_some_and(|c| {
        c.get("type").and_then(Value::as_str) == Some("result")
            && c.get("successful")
                .or_else(|| c.get("success"))
                .and_then(Value::as_bool)
                == Some(false)
    })
}

/// The edges in v4 order: key order, but each source with an `edgeOrder`
/// has its edges in that order (unlisted ones after, in key order).
pub(crate) fn v3_edges<'a>(
    map: &'a Map<String, Value>,
    nodes: &'a Map<String, Value>,
    report: &mut Report,
) -> Vec<V3Edge<'a>> {
    let mut all = Vec::new();
    match map.get("edges") {
        None | Some(Value::Null) => {}
        Some(Value::Object(edges)) => {
            for (id, e) in edges {
                let path = format!("edges/{id}");
                let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
                let (Some(source), Some(target)) = (text("source"), text("target")) else {
                    report.problem(
                        path,
                        "invalid_edge",
                        "an edge needs a string `source` and `target`",
                    );
                    continue;
                };
                all.push(V3Edge {
                    id: id.clone(),
                    source,
                    target,
                    forward: e.get("forwardCondition").filter(|v| !v.is_null()),
                    backward: e.get("backwardCondition").filter(|v| !v.is_null()),
                });
            }
        }
        Some(_) => report.problem(
            "edges",
            "invalid_field",
            "edges must be an object keyed by edge id",
        ),
    }
    let mut out: Vec<V3Edge> = Vec::with_capacity(all.len());
    let mut taken = vec![false; all.len()];
    for i in 0..all.len() {
        if taken[i] {
            continue;
        }
        let source = all[i].source.clone();
        let order: Vec<&str> = nodes
            .get(&source)
            .and_then(|n| n.get("edgeOrder"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut group: Vec<usize> = Vec::new();
        for id in &order {
            if let Some(j) =
                (0..all.len()).find(|&j| !taken[j] && all[j].source == source && all[j].id == *id)
            {
                taken[j] = true;
                group.push(j);
            }
        }
        if group.is_empty() {
            taken[i] = true;
            group.push(i);
        } else {
            for j in 0..all.len() {
                if !taken[j] && all[j].source == source {
                    taken[j] = true;
                    group.push(j);
                }
            }
        }
        for j in group {
            let e = &all[j];
            out.push(V3Edge {
                id: e.id.clone(),
                source: e.source.clone(),
                target: e.target.clone(),
                forward: e.forward,
                backward: e.backward,
            });
        }
    }
    out
}

/// The edges inside a chain: success leads to the next action, failure to
/// the node's old failure target (without one, the next action runs anyway).
pub(crate) fn chain_edges(
    id: &str,
    actions: &[ActionNode],
    failure: Option<&str>,
    out: &mut Vec<WorkflowEdge>,
) {
    for (i, pair) in actions.windows(2).enumerate() {
        let (a, b) = (&pair[0], &pair[1]);
        let n = i + 1;
        match failure {
            Some(f) => {
                out.push(WorkflowEdge {
                    id: format!("{id}__ok{n}"),
                    from: a.id.clone(),
                    to: b.id.clone(),
                    condition: EdgeCondition::Result { success: true },
                });
                out.push(WorkflowEdge {
                    id: format!("{id}__fail{n}"),
                    from: a.id.clone(),
                    to: f.to_owned(),
                    condition: EdgeCondition::Result { success: false },
                });
            }
            None => out.push(WorkflowEdge {
                id: format!("{id}__next{n}"),
                from: a.id.clone(),
                to: b.id.clone(),
                condition: EdgeCondition::Always,
            }),
        }
    }
}

pub(crate) fn condition(
    c: Option<&Value>,
    from: Option<NodeKind>,
    path: &str,
    report: &mut Report,
) -> Option<EdgeCondition> {
    let Some(c) = c else {
        return Some(EdgeCondition::Always);
    };
    let kind = c.get("type").and_then(Value::as_str).unwrap_or_default();
    let mapped = match kind {
        "unconditional" | "always" => EdgeCondition::Always,
        "result" => match c
            .get("successful")
            .or_else(|| c.get("success"))
            .and_then(Value::as_bool)
        {
            Some(success) => EdgeCondition::Result { success },
            None => {
                report.problem(
                    join(path, "successful"),
                    "invalid_condition",
                    "a result condition needs a boolean `successful`",
                );
                return None;
            }
        },
        "llm" => match c.get("condition").and_then(Value::as_str) {
            Some(text) => EdgeCondition::Llm {
                condition: text.to_owned(),
            },
            None => {
                report.problem(
                    join(path, "condition"),
                    "invalid_condition",
                    "an llm condition needs its `condition` text",
                );
                return None;
            }
        },
        "expression" => {
            let at = join(path, "expression");
            let expr = match expression(c.get("expression").unwrap_or(&Value::Null), &at) {
                Ok(e) => e,
                Err((p, m)) => {
                    report.problem(p, "invalid_expression", m);
                    return None;
                }
            };
            match expr {
                // A lone llm leaf is an llm edge.
                Expr::Llm { prompt, .. } => EdgeCondition::Llm { condition: prompt },
                e if has_llm_leaf(&e) => {
                    report.problem(at, "llm_leaf_not_allowed", "an llm leaf inside an expression has no v4 form; only a lone llm leaf becomes an llm edge");
                    return None;
                }
                e => EdgeCondition::Expression { expression: e },
            }
        }
        other => {
            report.problem(
                join(path, "type"),
                "invalid_condition",
                format!("condition type `{other}` is unknown"),
            );
            return None;
        }
    };
    if matches!(mapped, EdgeCondition::Llm { .. }) && from.is_some_and(|k| k != NodeKind::Agent) {
        report.problem(
            path,
            "llm_condition_not_allowed",
            "an llm condition may only leave an agent node",
        );
        return None;
    }
    Some(mapped)
}
