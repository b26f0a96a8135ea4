//! The graph rules of a workflow (design §4): node and edge ids, the start
//! and error nodes, every edge and its condition, exhaustive routing at the
//! nodes that run without the model, no cycle of them joined by `always`
//! edges, and every node reachable from the start.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rtc_expr::{LlmLeaves, check};
use rtc_protocol::{
    EdgeCondition, GLOBAL_EDGE_SOURCE, NodeKind, TransferTarget, ValueType, Workflow, WorkflowEdge,
    WorkflowNode,
};

use crate::error::{Rule, ValidationError};
use crate::names::check_max_chars;
use crate::workflow_rules::{Vars, expression_error};

/// The nodes by id, with their index.
type NodeMap<'w> = BTreeMap<&'w str, (usize, &'w WorkflowNode)>;

/// Every graph rule, in the order their codes are reported.
pub(crate) fn check_graph(w: &Workflow, vars: &Vars<'_>) -> Rule {
    let nodes = check_node_ids(w)?;
    check_start_and_error_nodes(w, &nodes)?;
    check_edges(w, &nodes, vars)?;
    let reachable = reachable(w, &nodes);
    check_routing(w, &reachable)?;
    check_cycles(w, &nodes)?;
    match w.nodes.iter().position(|n| !reachable.contains(n.id())) {
        Some(i) => Err(ValidationError::new(
            "unreachable_node",
            format!("nodes[{i}]"),
            format!(
                "node `{}` cannot be reached from the start node `{}`",
                w.nodes[i].id(),
                w.start_node_id.as_deref().unwrap_or_default()
            ),
        )),
        None => Ok(()),
    }
}

/// `^[a-z][a-z0-9_]{0,63}$`
fn is_node_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && id.len() <= 64
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// `^[A-Za-z0-9_-]{1,64}$`
fn is_edge_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_node_ids(w: &Workflow) -> Rule<NodeMap<'_>> {
    let mut nodes = NodeMap::new();
    for (i, node) in w.nodes.iter().enumerate() {
        let id = node.id();
        let field = format!("nodes[{i}].id");
        if !is_node_id(id) {
            return Err(ValidationError::new(
                "invalid_id",
                field,
                format!(
                    "node ids start with a lowercase letter, then lowercase letters, digits or `_` (at most 64); got {id:?}"
                ),
            ));
        }
        if let Some((prev, _)) = nodes.insert(id, (i, node)) {
            return Err(ValidationError::new(
                "duplicate_id",
                field,
                format!("node id `{id}` is used twice (nodes[{prev}] and nodes[{i}])"),
            ));
        }
    }
    Ok(nodes)
}

fn check_start_and_error_nodes(w: &Workflow, nodes: &NodeMap<'_>) -> Rule {
    let Some(start) = &w.start_node_id else {
        return Err(ValidationError::new(
            "start_node_missing",
            "startNodeId",
            "a workflow needs `startNodeId`, the node its sessions enter first",
        ));
    };
    match nodes.get(start.as_str()) {
        None => {
            return Err(ValidationError::new(
                "start_node_missing",
                "startNodeId",
                format!("`startNodeId` names `{start}`, which is not a node of this workflow"),
            ));
        }
        Some((_, n)) if n.kind() == NodeKind::End => {
            return Err(ValidationError::new(
                "start_node_invalid",
                "startNodeId",
                format!("the start node `{start}` is an end node: the session would end at once"),
            ));
        }
        Some(_) => {}
    }
    if let Some(id) = &w.on_error_node_id {
        let kind = nodes.get(id.as_str()).map(|(_, n)| n.kind());
        if !matches!(kind, Some(NodeKind::End | NodeKind::Transfer)) {
            return Err(ValidationError::new(
                "on_error_node_invalid",
                "onErrorNodeId",
                format!(
                    "`onErrorNodeId` must name an end or transfer node; `{id}` is {}",
                    kind.map_or("not a node of this workflow".to_owned(), |k| format!(
                        "an {} node",
                        k.as_str()
                    ))
                ),
            ));
        }
    }
    Ok(())
}

/// A node nothing leaves: an end, or a transfer to an assistant (which
/// runs the rest of the session). A human transfer may have deterministic
/// edges, walked when the human releases the session.
fn is_terminal(node: &WorkflowNode) -> bool {
    match node {
        WorkflowNode::End(_) => true,
        WorkflowNode::Transfer(t) => matches!(t.target, TransferTarget::Assistant { .. }),
        _ => false,
    }
}

fn check_edges(w: &Workflow, nodes: &NodeMap<'_>, vars: &Vars<'_>) -> Rule {
    let mut ids = BTreeMap::new();
    for (i, e) in w.edges.iter().enumerate() {
        let field = format!("edges[{i}]");
        if !is_edge_id(&e.id) {
            return Err(ValidationError::new(
                "invalid_id",
                format!("{field}.id"),
                format!(
                    "edge ids are 1 to 64 letters, digits, `_` or `-`; got {:?}",
                    e.id
                ),
            ));
        }
        if let Some(prev) = ids.insert(e.id.as_str(), i) {
            return Err(ValidationError::new(
                "duplicate_id",
                format!("{field}.id"),
                format!(
                    "edge id `{}` is used twice (edges[{prev}] and edges[{i}])",
                    e.id
                ),
            ));
        }
        let source = if e.from == GLOBAL_EDGE_SOURCE {
            None
        } else {
            match nodes.get(e.from.as_str()) {
                Some((_, n)) => Some(*n),
                None => return Err(dangling(&field, "from", &e.from)),
            }
        };
        if !nodes.contains_key(e.to.as_str()) {
            return Err(dangling(&field, "to", &e.to));
        }
        if let Some(n) = source
            && is_terminal(n)
        {
            return Err(ValidationError::new(
                "edge_from_terminal",
                format!("{field}.from"),
                format!(
                    "node `{}` ends the workflow's part of the session ({} node), so no edge may leave it",
                    e.from,
                    describe(n)
                ),
            ));
        }
        check_condition(e, &field, source.map(WorkflowNode::kind), vars)?;
    }
    Ok(())
}

fn dangling(field: &str, end: &str, id: &str) -> ValidationError {
    ValidationError::new(
        "dangling_edge",
        format!("{field}.{end}"),
        format!("`{end}` names `{id}`, which is not a node of this workflow"),
    )
}

fn describe(n: &WorkflowNode) -> &'static str {
    match n {
        WorkflowNode::Transfer(_) => "a transfer-to-assistant",
        _ => "an end",
    }
}

/// The condition of edge `e`, leaving a node of kind `source` (`None`: a
/// global edge, checked at every agent node).
fn check_condition(
    e: &WorkflowEdge,
    field: &str,
    source: Option<NodeKind>,
    vars: &Vars<'_>,
) -> Rule {
    let from = |k: Option<NodeKind>| {
        k.map_or("a global edge (`from: \"*\"`)".to_owned(), |k| {
            format!("an edge leaving `{}` (an {} node)", e.from, k.as_str())
        })
    };
    match &e.condition {
        EdgeCondition::Always if source.is_none() => Err(ValidationError::new(
            "invalid_condition",
            format!("{field}.condition"),
            "a global edge (`from: \"*\"`) carries an `expression` or `llm` condition; an `always` one would leave every agent node at once",
        )),
        EdgeCondition::Always => Ok(()),
        EdgeCondition::Llm { condition } => {
            if source.is_some_and(|k| k != NodeKind::Agent) {
                return Err(ValidationError::new(
                    "llm_condition_not_allowed",
                    format!("{field}.condition"),
                    format!(
                        "{} cannot have an `llm` condition: only agent turns change the conversation; use an `expression` or `result` condition",
                        from(source)
                    ),
                ));
            }
            let f = format!("{field}.condition.condition");
            if condition.trim().is_empty() {
                return Err(ValidationError::new(
                    "missing_field",
                    f,
                    "an `llm` condition needs the question the judge answers",
                ));
            }
            check_max_chars(condition, &f, 4_096)
        }
        EdgeCondition::Result { .. } => {
            if source == Some(NodeKind::Action) {
                Ok(())
            } else {
                Err(ValidationError::new(
                    "result_condition_not_allowed",
                    format!("{field}.condition"),
                    format!(
                        "{} cannot have a `result` condition: only actions have a result",
                        from(source)
                    ),
                ))
            }
        }
        EdgeCondition::Expression { expression } => {
            let f = format!("{field}.condition.expression");
            let ty = check(expression, &vars.types, LlmLeaves::Rejected)
                .map_err(|err| expression_error(err, &f))?;
            if matches!(ty, ValueType::Boolean | ValueType::Json) {
                Ok(())
            } else {
                Err(ValidationError::new(
                    "type_mismatch",
                    f,
                    format!("an edge's expression must be a boolean; this one is a {ty}"),
                ))
            }
        }
    }
}

/// The nodes a session can enter: from the start and the error node,
/// along edges, and from every agent node along the global edges.
fn reachable<'w>(w: &'w Workflow, nodes: &NodeMap<'w>) -> BTreeSet<&'w str> {
    let global: Vec<&str> = w
        .edges_from(GLOBAL_EDGE_SOURCE)
        .map(|e| e.to.as_str())
        .collect();
    let mut seen = BTreeSet::new();
    let mut queue: VecDeque<&str> = w
        .start_node_id
        .iter()
        .chain(&w.on_error_node_id)
        .map(String::as_str)
        .filter(|id| nodes.contains_key(id))
        .collect();
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id) {
            continue;
        }
        queue.extend(w.edges_from(id).map(|e| e.to.as_str()));
        if nodes
            .get(id)
            .is_some_and(|(_, n)| n.kind() == NodeKind::Agent)
        {
            queue.extend(&global);
        }
    }
    seen
}

/// A reachable action or updateState node always has a way on: an
/// `always` edge, or (an action) both `result` edges.
fn check_routing(w: &Workflow, reachable: &BTreeSet<&str>) -> Rule {
    for (i, node) in w.nodes.iter().enumerate() {
        let kind = node.kind();
        if !kind.is_deterministic() || !reachable.contains(node.id()) {
            continue;
        }
        let edges: Vec<&EdgeCondition> = w.edges_from(node.id()).map(|e| &e.condition).collect();
        let always = edges.iter().any(|c| matches!(c, EdgeCondition::Always));
        let result = |want: bool| {
            edges
                .iter()
                .any(|c| matches!(c, EdgeCondition::Result { success } if *success == want))
        };
        let exhaustive = always || (kind == NodeKind::Action && result(true) && result(false));
        if !exhaustive {
            let fix = if kind == NodeKind::Action {
                "an `always` edge, or both a `result: true` and a `result: false` edge"
            } else {
                "an `always` edge (after its conditional ones)"
            };
            return Err(ValidationError::new(
                "non_exhaustive_routing",
                format!("nodes[{i}]"),
                format!(
                    "`{}` runs without the model and must always have a way on: give it {fix}",
                    node.id()
                ),
            ));
        }
    }
    Ok(())
}

/// No cycle made only of action and updateState nodes joined by `always`
/// edges: nothing would ever stop it.
fn check_cycles(w: &Workflow, nodes: &NodeMap<'_>) -> Rule {
    let deterministic = |id: &str| {
        nodes
            .get(id)
            .is_some_and(|(_, n)| n.kind().is_deterministic())
    };
    let mut next: BTreeMap<&str, Vec<(usize, &str)>> = BTreeMap::new();
    for (k, e) in w.edges.iter().enumerate() {
        if matches!(e.condition, EdgeCondition::Always)
            && deterministic(&e.from)
            && deterministic(&e.to)
        {
            next.entry(e.from.as_str())
                .or_default()
                .push((k, e.to.as_str()));
        }
    }
    // Depth-first, iteratively: `path` is the current chain of nodes.
    let mut done: BTreeSet<&str> = BTreeSet::new();
    for node in &w.nodes {
        let root = node.id();
        if done.contains(root) || !next.contains_key(root) {
            continue;
        }
        let mut path: Vec<&str> = vec![root];
        let mut cursor: Vec<usize> = vec![0];
        while let (Some(&here), Some(at)) = (path.last(), cursor.last_mut()) {
            let out = next.get(here).map(Vec::as_slice).unwrap_or_default();
            let Some(&(k, to)) = out.get(*at) else {
                done.insert(here);
                path.pop();
                cursor.pop();
                continue;
            };
            *at += 1;
            if let Some(start) = path.iter().position(|p| *p == to) {
                let mut cycle: Vec<&str> = path[start..].to_vec();
                cycle.push(to);
                return Err(ValidationError::new(
                    "unbounded_cycle",
                    format!("edges[{k}]"),
                    format!(
                        "{} is a cycle of nodes that run without the model joined by `always` edges: it would never stop; make one edge conditional or pass through an agent node",
                        cycle.join(" → ")
                    ),
                ));
            }
            if !done.contains(to) {
                path.push(to);
                cursor.push(0);
            }
        }
    }
    Ok(())
}
