//! The JSON encoding of expressions (R-EX-5). Type checking and evaluation
//! live in `rtc-expr`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ValueType;

/// A typed expression tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum Expr {
    Constant {
        value: Value,
    },
    Variable {
        name: String,
    },
    Llm {
        prompt: String,
        #[serde(rename = "outputType")]
        output_type: LlmOutputType,
    },
    If {
        cond: Box<Expr>,
        then: Box<Expr>,
        #[serde(rename = "else")]
        otherwise: Box<Expr>,
    },
    And {
        args: Vec<Expr>,
    },
    Or {
        args: Vec<Expr>,
    },
    Concat {
        args: Vec<Expr>,
    },
    Not {
        arg: Box<Expr>,
    },
    Eq {
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Ne {
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Lt {
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Le {
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Gt {
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Ge {
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Add {
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Sub {
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Mul {
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Div {
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Mod {
        left: Box<Expr>,
        right: Box<Expr>,
    },
}

/// The types an `llm` leaf may produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LlmOutputType {
    String,
    Number,
    Boolean,
}

impl From<LlmOutputType> for ValueType {
    fn from(t: LlmOutputType) -> Self {
        match t {
            LlmOutputType::String => ValueType::String,
            LlmOutputType::Number => ValueType::Number,
            LlmOutputType::Boolean => ValueType::Boolean,
        }
    }
}

/// The binary operators, for code that treats them alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl BinaryOp {
    pub fn name(self) -> &'static str {
        match self {
            Self::Eq => "eq",
            Self::Ne => "ne",
            Self::Lt => "lt",
            Self::Le => "le",
            Self::Gt => "gt",
            Self::Ge => "ge",
            Self::Add => "add",
            Self::Sub => "sub",
            Self::Mul => "mul",
            Self::Div => "div",
            Self::Mod => "mod",
        }
    }
}

impl Expr {
    /// The operator and operands of a binary node.
    pub fn as_binary(&self) -> Option<(BinaryOp, &Expr, &Expr)> {
        let (op, l, r) = match self {
            Self::Eq { left, right } => (BinaryOp::Eq, left, right),
            Self::Ne { left, right } => (BinaryOp::Ne, left, right),
            Self::Lt { left, right } => (BinaryOp::Lt, left, right),
            Self::Le { left, right } => (BinaryOp::Le, left, right),
            Self::Gt { left, right } => (BinaryOp::Gt, left, right),
            Self::Ge { left, right } => (BinaryOp::Ge, left, right),
            Self::Add { left, right } => (BinaryOp::Add, left, right),
            Self::Sub { left, right } => (BinaryOp::Sub, left, right),
            Self::Mul { left, right } => (BinaryOp::Mul, left, right),
            Self::Div { left, right } => (BinaryOp::Div, left, right),
            Self::Mod { left, right } => (BinaryOp::Mod, left, right),
            _ => return None,
        };
        Some((op, l, r))
    }

    /// Whether any `llm` leaf appears in the tree.
    pub fn contains_llm(&self) -> bool {
        match self {
            Self::Llm { .. } => true,
            Self::Constant { .. } | Self::Variable { .. } => false,
            Self::If {
                cond,
                then,
                otherwise,
            } => cond.contains_llm() || then.contains_llm() || otherwise.contains_llm(),
            Self::And { args } | Self::Or { args } | Self::Concat { args } => {
                args.iter().any(Expr::contains_llm)
            }
            Self::Not { arg } => arg.contains_llm(),
            other => other
                .as_binary()
                .is_some_and(|(_, l, r)| l.contains_llm() || r.contains_llm()),
        }
    }
}
