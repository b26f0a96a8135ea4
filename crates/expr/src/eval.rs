//! Run-time evaluation of expression trees. Errors (division by zero, an
//! `llm` answer of the wrong type) are returned, never panicked, so the
//! caller can leave the variable unchanged and report it (R-EX-3).

use std::collections::BTreeMap;
use std::future::Future;

use rtc_protocol::{BinaryOp, Expr, LlmOutputType, ValueType};
use serde_json::{Number, Value};

use crate::type_of_value;

/// Evaluates `llm` leaves: asks a model to extract a typed value from the
/// conversation. Implemented by the runtime.
pub trait LlmLeafEvaluator: Sync {
    fn evaluate(
        &self,
        prompt: &str,
        output_type: LlmOutputType,
    ) -> impl Future<Output = Result<Value, String>> + Send;
}

/// For deterministic contexts: every `llm` leaf fails.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLlm;

impl LlmLeafEvaluator for NoLlm {
    async fn evaluate(&self, _prompt: &str, _output_type: LlmOutputType) -> Result<Value, String> {
        Err("`llm` leaves cannot be evaluated here".to_owned())
    }
}

/// What one evaluation may make: the longest string (`concat`'s output)
/// and the most `llm` leaves it asks. A tenant's expression can double a
/// string per `concat` argument, so without a bound a few rules exhaust
/// the server's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvalLimits {
    /// Most bytes of a string an expression makes.
    pub max_string_bytes: usize,
    /// Most `llm` leaves one evaluation asks (each is a model call).
    pub max_llm_leaves: usize,
}

impl Default for EvalLimits {
    fn default() -> Self {
        Self {
            max_string_bytes: 16 * 1024,
            max_llm_leaves: 8,
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("division by zero in `{op}`")]
    DivisionByZero { op: &'static str },
    #[error("`{op}` overflowed or produced a non-finite number")]
    Overflow { op: &'static str },
    #[error("`{op}` expected {expected}, found {found}")]
    TypeMismatch {
        op: &'static str,
        expected: &'static str,
        found: ValueType,
    },
    #[error("variable `{name}` has no value")]
    UnknownVariable { name: String },
    #[error("`llm` leaf failed: {message}")]
    Llm { message: String },
    #[error("`llm` leaf answered {found} where {expected} was expected")]
    LlmWrongType {
        expected: ValueType,
        found: ValueType,
    },
    #[error("`{op}` would make a string over {max} bytes (value_too_large)")]
    TooLarge { op: &'static str, max: usize },
    #[error("more than {max} `llm` leaves in one evaluation (too_many_llm_leaves)")]
    TooManyLlmLeaves { max: usize },
}

impl EvalError {
    /// The stable code of the error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::DivisionByZero { .. } => "division_by_zero",
            Self::Overflow { .. } => "overflow",
            Self::TypeMismatch { .. } => "type_mismatch",
            Self::UnknownVariable { .. } => "unknown_variable",
            Self::Llm { .. } => "llm_leaf_failed",
            Self::LlmWrongType { .. } => "llm_leaf_wrong_type",
            Self::TooLarge { .. } => "value_too_large",
            Self::TooManyLlmLeaves { .. } => "too_many_llm_leaves",
        }
    }
}

/// Evaluate `expr` with the current variable values within `limits`.
/// `and`, `or` and `if` short-circuit, so an `llm` leaf on an untaken
/// branch is never asked.
pub async fn evaluate<L: LlmLeafEvaluator>(
    expr: &Expr,
    vars: &BTreeMap<String, Value>,
    llm: &L,
    limits: &EvalLimits,
) -> Result<Value, EvalError> {
    let mut eval = Evaluation {
        vars,
        llm,
        limits,
        leaves: 0,
    };
    eval.evaluate(expr).await
}

struct Evaluation<'a, L> {
    vars: &'a BTreeMap<String, Value>,
    llm: &'a L,
    limits: &'a EvalLimits,
    /// `llm` leaves asked so far.
    leaves: usize,
}

impl<L: LlmLeafEvaluator> Evaluation<'_, L> {
    async fn evaluate(&mut self, expr: &Expr) -> Result<Value, EvalError> {
        match expr {
            Expr::Constant { value } => Ok(value.clone()),
            Expr::Variable { name } => self
                .vars
                .get(name)
                .cloned()
                .ok_or_else(|| EvalError::UnknownVariable { name: name.clone() }),
            Expr::Llm {
                prompt,
                output_type,
            } => {
                self.leaves += 1;
                if self.leaves > self.limits.max_llm_leaves {
                    return Err(EvalError::TooManyLlmLeaves {
                        max: self.limits.max_llm_leaves,
                    });
                }
                let value = self
                    .llm
                    .evaluate(prompt, *output_type)
                    .await
                    .map_err(|message| EvalError::Llm { message })?;
                let want: ValueType = (*output_type).into();
                let got = type_of_value(&value);
                if got == want {
                    Ok(value)
                } else {
                    Err(EvalError::LlmWrongType {
                        expected: want,
                        found: got,
                    })
                }
            }
            Expr::If {
                cond,
                then,
                otherwise,
            } => {
                if as_bool("if", &Box::pin(self.evaluate(cond)).await?)? {
                    Box::pin(self.evaluate(then)).await
                } else {
                    Box::pin(self.evaluate(otherwise)).await
                }
            }
            Expr::And { args } => {
                for arg in args {
                    if !as_bool("and", &Box::pin(self.evaluate(arg)).await?)? {
                        return Ok(Value::Bool(false));
                    }
                }
                Ok(Value::Bool(true))
            }
            Expr::Or { args } => {
                for arg in args {
                    if as_bool("or", &Box::pin(self.evaluate(arg)).await?)? {
                        return Ok(Value::Bool(true));
                    }
                }
                Ok(Value::Bool(false))
            }
            Expr::Not { arg } => Ok(Value::Bool(!as_bool(
                "not",
                &Box::pin(self.evaluate(arg)).await?,
            )?)),
            Expr::Concat { args } => {
                let mut out = String::new();
                for arg in args {
                    match Box::pin(self.evaluate(arg)).await? {
                        Value::String(s) => out.push_str(&s),
                        v @ (Value::Number(_) | Value::Bool(_)) => out.push_str(&v.to_string()),
                        other => {
                            return Err(EvalError::TypeMismatch {
                                op: "concat",
                                expected: "string",
                                found: type_of_value(&other),
                            });
                        }
                    }
                    // Checked after every argument: the string never holds
                    // more than the bound plus one argument.
                    if out.len() > self.limits.max_string_bytes {
                        return Err(EvalError::TooLarge {
                            op: "concat",
                            max: self.limits.max_string_bytes,
                        });
                    }
                }
                Ok(Value::String(out))
            }
            other => {
                let Some((op, left, right)) = other.as_binary() else {
                    return Err(EvalError::TypeMismatch {
                        op: "expression",
                        expected: "a known node",
                        found: ValueType::Json,
                    });
                };
                let l = Box::pin(self.evaluate(left)).await?;
                let r = Box::pin(self.evaluate(right)).await?;
                binary(op, &l, &r)
            }
        }
    }
}

fn as_bool(op: &'static str, v: &Value) -> Result<bool, EvalError> {
    v.as_bool().ok_or(EvalError::TypeMismatch {
        op,
        expected: "boolean",
        found: type_of_value(v),
    })
}

fn binary(op: BinaryOp, l: &Value, r: &Value) -> Result<Value, EvalError> {
    let name = op.name();
    match op {
        BinaryOp::Eq => Ok(Value::Bool(values_equal(l, r))),
        BinaryOp::Ne => Ok(Value::Bool(!values_equal(l, r))),
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            let ord = match (l, r) {
                (Value::Number(a), Value::Number(b)) => number(a).partial_cmp(&number(b)),
                (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
                (Value::Number(_), other) | (other, _) => {
                    let expected = if l.is_number() {
                        "number"
                    } else {
                        "number or string"
                    };
                    return Err(EvalError::TypeMismatch {
                        op: name,
                        expected,
                        found: type_of_value(other),
                    });
                }
            };
            let Some(ord) = ord else {
                return Ok(Value::Bool(false));
            };
            Ok(Value::Bool(match op {
                BinaryOp::Lt => ord.is_lt(),
                BinaryOp::Le => ord.is_le(),
                BinaryOp::Gt => ord.is_gt(),
                _ => ord.is_ge(),
            }))
        }
        _ => arithmetic(op, l, r),
    }
}

fn values_equal(l: &Value, r: &Value) -> bool {
    match (l, r) {
        (Value::Number(a), Value::Number(b)) => number(a) == number(b),
        _ => l == r,
    }
}

fn number(n: &Number) -> f64 {
    n.as_f64().unwrap_or(f64::NAN)
}

fn arithmetic(op: BinaryOp, l: &Value, r: &Value) -> Result<Value, EvalError> {
    let name = op.name();
    let (Value::Number(a), Value::Number(b)) = (l, r) else {
        let bad = if l.is_number() { r } else { l };
        return Err(EvalError::TypeMismatch {
            op: name,
            expected: "number",
            found: type_of_value(bad),
        });
    };
    let zero_divisor = matches!(op, BinaryOp::Div | BinaryOp::Mod) && number(b) == 0.0;
    if zero_divisor {
        return Err(EvalError::DivisionByZero { op: name });
    }
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        let exact = match op {
            BinaryOp::Add => x.checked_add(y),
            BinaryOp::Sub => x.checked_sub(y),
            BinaryOp::Mul => x.checked_mul(y),
            BinaryOp::Mod => x.checked_rem(y),
            _ => x
                .checked_rem(y)
                .filter(|rem| *rem == 0)
                .and_then(|_| x.checked_div(y)),
        };
        if let Some(v) = exact {
            return Ok(Value::Number(v.into()));
        }
        if op != BinaryOp::Div {
            return Err(EvalError::Overflow { op: name });
        }
    }
    let (x, y) = (number(a), number(b));
    let v = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div => x / y,
        _ => x % y,
    };
    Number::from_f64(v)
        .map(Value::Number)
        .ok_or(EvalError::Overflow { op: name })
}
