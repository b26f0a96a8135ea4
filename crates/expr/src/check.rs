//! Save-time type checking of expression trees (R-EX-3, R-EX-4).

use std::collections::BTreeMap;

use rtc_protocol::{BinaryOp, Expr, ValueType};

use crate::type_of_value;

/// Deepest nesting accepted at save time.
pub const MAX_DEPTH: usize = 32;
/// Most nodes accepted in one expression.
pub const MAX_NODES: usize = 512;
const MAX_PROMPT_CHARS: usize = 4_000;

/// Whether `llm` leaves are allowed: the built-in `updateState` allows them;
/// deterministic contexts (workflow Update State nodes, edge conditions) do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmLeaves {
    Allowed,
    Rejected,
}

/// A type error, located by a path relative to the expression's root (empty
/// for the root itself, e.g. `.args[1].left`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CheckError {
    pub path: String,
    pub code: &'static str,
    pub message: String,
}

impl CheckError {
    fn new(path: &str, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            code,
            message: message.into(),
        }
    }
}

/// Type-check `expr` against the declared variable types; returns its type.
pub fn check(
    expr: &Expr,
    vars: &BTreeMap<String, ValueType>,
    llm: LlmLeaves,
) -> Result<ValueType, CheckError> {
    let mut checker = Checker {
        vars,
        llm,
        nodes: 0,
    };
    checker.check(expr, "", 1)
}

/// Check that `expr` may be assigned to a variable of type `target`.
pub fn check_assignment(
    expr: &Expr,
    target: ValueType,
    vars: &BTreeMap<String, ValueType>,
    llm: LlmLeaves,
) -> Result<(), CheckError> {
    let ty = check(expr, vars, llm)?;
    if target == ValueType::Json || ty == target || ty == ValueType::Json {
        Ok(())
    } else {
        Err(CheckError::new(
            "",
            "type_mismatch",
            format!("expression has type {ty} but the variable has type {target}"),
        ))
    }
}

/// How many `llm` leaves `expr` holds (each may be one model call when it
/// is evaluated).
pub fn count_llm_leaves(expr: &Expr) -> usize {
    match expr {
        Expr::Llm { .. } => 1,
        Expr::Constant { .. } | Expr::Variable { .. } => 0,
        Expr::If {
            cond,
            then,
            otherwise,
        } => count_llm_leaves(cond) + count_llm_leaves(then) + count_llm_leaves(otherwise),
        Expr::And { args } | Expr::Or { args } | Expr::Concat { args } => {
            args.iter().map(count_llm_leaves).sum()
        }
        Expr::Not { arg } => count_llm_leaves(arg),
        other => other
            .as_binary()
            .map_or(0, |(_, l, r)| count_llm_leaves(l) + count_llm_leaves(r)),
    }
}

struct Checker<'a> {
    vars: &'a BTreeMap<String, ValueType>,
    llm: LlmLeaves,
    nodes: usize,
}

impl Checker<'_> {
    fn check(&mut self, expr: &Expr, path: &str, depth: usize) -> Result<ValueType, CheckError> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(CheckError::new(
                path,
                "expression_too_large",
                format!("expression has more than {MAX_NODES} nodes"),
            ));
        }
        if depth > MAX_DEPTH {
            return Err(CheckError::new(
                path,
                "expression_too_deep",
                format!("expression is nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        let d = depth + 1;
        match expr {
            Expr::Constant { value } => Ok(type_of_value(value)),
            Expr::Variable { name } => self.vars.get(name).copied().ok_or_else(|| {
                CheckError::new(
                    &format!("{path}.name"),
                    "unknown_variable",
                    format!("variable `{name}` is not declared"),
                )
            }),
            Expr::Llm {
                prompt,
                output_type,
            } => {
                if self.llm == LlmLeaves::Rejected {
                    return Err(CheckError::new(
                        path,
                        "llm_leaf_not_allowed",
                        "`llm` leaves are not allowed in a deterministic expression",
                    ));
                }
                if prompt.trim().is_empty() || prompt.chars().count() > MAX_PROMPT_CHARS {
                    return Err(CheckError::new(
                        &format!("{path}.prompt"),
                        "invalid_prompt",
                        format!("an `llm` prompt must have 1 to {MAX_PROMPT_CHARS} characters"),
                    ));
                }
                Ok((*output_type).into())
            }
            Expr::If {
                cond,
                then,
                otherwise,
            } => {
                self.expect(cond, ValueType::Boolean, &format!("{path}.cond"), d)?;
                let t = self.check(then, &format!("{path}.then"), d)?;
                let e = self.check(otherwise, &format!("{path}.else"), d)?;
                match (t, e) {
                    (a, b) if a == b => Ok(a),
                    (ValueType::Json, _) | (_, ValueType::Json) => Ok(ValueType::Json),
                    (a, b) => Err(CheckError::new(
                        path,
                        "type_mismatch",
                        format!("`if` branches differ: then is {a}, else is {b}"),
                    )),
                }
            }
            Expr::And { args } | Expr::Or { args } => {
                self.non_empty(args, path)?;
                for (i, arg) in args.iter().enumerate() {
                    self.expect(arg, ValueType::Boolean, &format!("{path}.args[{i}]"), d)?;
                }
                Ok(ValueType::Boolean)
            }
            Expr::Concat { args } => {
                self.non_empty(args, path)?;
                for (i, arg) in args.iter().enumerate() {
                    let p = format!("{path}.args[{i}]");
                    if self.check(arg, &p, d)? == ValueType::Json {
                        return Err(CheckError::new(
                            &p,
                            "type_mismatch",
                            "`concat` takes strings, numbers or booleans, not json",
                        ));
                    }
                }
                Ok(ValueType::String)
            }
            Expr::Not { arg } => {
                self.expect(arg, ValueType::Boolean, &format!("{path}.arg"), d)?;
                Ok(ValueType::Boolean)
            }
            other => {
                let Some((op, left, right)) = other.as_binary() else {
                    return Err(CheckError::new(
                        path,
                        "invalid_expression",
                        "unknown expression node",
                    ));
                };
                let l = self.check(left, &format!("{path}.left"), d)?;
                let r = self.check(right, &format!("{path}.right"), d)?;
                binary_type(op, l, r).map_err(|m| CheckError::new(path, "type_mismatch", m))
            }
        }
    }

    fn expect(
        &mut self,
        expr: &Expr,
        want: ValueType,
        path: &str,
        depth: usize,
    ) -> Result<(), CheckError> {
        let got = self.check(expr, path, depth)?;
        if got == want || got == ValueType::Json {
            Ok(())
        } else {
            Err(CheckError::new(
                path,
                "type_mismatch",
                format!("expected {want}, found {got}"),
            ))
        }
    }

    fn non_empty(&self, args: &[Expr], path: &str) -> Result<(), CheckError> {
        if args.is_empty() {
            Err(CheckError::new(
                &format!("{path}.args"),
                "invalid_expression",
                "`args` must not be empty",
            ))
        } else {
            Ok(())
        }
    }
}

fn binary_type(op: BinaryOp, l: ValueType, r: ValueType) -> Result<ValueType, String> {
    use ValueType::{Boolean, Json, Number, String as Str};
    let name = op.name();
    match op {
        BinaryOp::Eq | BinaryOp::Ne => {
            if l == r || l == Json || r == Json {
                Ok(Boolean)
            } else {
                Err(format!(
                    "`{name}` compares values of one type, found {l} and {r}"
                ))
            }
        }
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => match (l, r) {
            (Number | Json, Number | Json) | (Str | Json, Str | Json) => Ok(Boolean),
            _ => Err(format!(
                "`{name}` compares two numbers or two strings, found {l} and {r}"
            )),
        },
        _ => match (l, r) {
            (Number | Json, Number | Json) => Ok(Number),
            _ => Err(format!("`{name}` takes numbers, found {l} and {r}")),
        },
    }
}
