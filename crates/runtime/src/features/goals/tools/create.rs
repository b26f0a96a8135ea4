//! `createGoal {condition, max_turns=50, token_budget?, deadline_minutes?}`.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::json;

use super::GoalOp;
use super::MAX_TURNS_LIMIT;
use crate::tool::parsed;

pub const NAME: &str = "createGoal";

const DESCRIPTION: &str = "Set yourself a goal that keeps you working across turns without waiting for the user. After every turn a judge checks the condition against the conversation; while it does not hold, you get another turn to make progress. The goal ends when the condition holds (or you call completeGoal), when you cancel it, or when it runs out of turns, tokens or time.
- condition: an observable end state, e.g. \"the user has a comparison table of three laptops with prices\".
- max_turns: most turns to spend (default 50).
- token_budget / deadline_minutes: optional limits.
Use it for multi-step work the user asked you to carry through; do not use it for a single answer.
Created during a loop's turn (a message starting \"[Loop\"), the goal is instead a periodic check of that loop: the judge checks it after the loop's later turns and the user's, and it gives you no turns of its own; each judged turn counts toward max_turns.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {
                "condition": {"type": "string", "minLength": 1, "maxLength": 1000},
                "max_turns": {"type": "integer", "minimum": 1, "maximum": MAX_TURNS_LIMIT, "default": 50},
                "token_budget": {"type": "integer", "minimum": 1000},
                "deadline_minutes": {"type": "integer", "minimum": 1, "maximum": 10080}},
            "required": ["condition"], "additionalProperties": false}),
    }
}

#[derive(Debug, Deserialize)]
pub struct Create {
    pub condition: String,
    #[serde(default = "default_turns")]
    pub max_turns: i64,
    pub token_budget: Option<i64>,
    pub deadline_minutes: Option<i64>,
}

fn default_turns() -> i64 {
    50
}

pub fn parse(arguments: &str) -> Result<Create, ArgumentError> {
    let c: Create = crate::builtins::parse_arguments(&spec().parameters, arguments)?;
    if c.condition.trim().is_empty() {
        return Err("`condition` must describe the end state".into());
    }
    Ok(c)
}

crate::builtins::built_in!(CreateGoal, goals, |cx| async move {
    let op = GoalOp::Create(parsed!(parse(&cx.call.arguments)));
    super::run(cx, op).await
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_arguments() {
        let c = parse(r#"{"condition": "three offers compared"}"#).unwrap();
        assert_eq!((c.max_turns, c.token_budget), (50, None));
        assert!(
            parse(r#"{"condition": "x", "max_turns": 0}"#)
                .unwrap_err()
                .contains("max_turns")
        );
        assert!(
            parse(r#"{"condition": " "}"#)
                .unwrap_err()
                .contains("condition")
        );
        assert!(
            super::super::complete::parse("{}")
                .unwrap_err()
                .contains("goal_id")
        );
        assert_eq!(
            super::super::cancel::parse(r#"{"goal_id": "g"}"#)
                .unwrap()
                .goal_id,
            "g"
        );
    }
}
