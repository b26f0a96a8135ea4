//! `todoWrite {todos}` (R-TD-1..2): the model's task list, replaced whole
//! on every call.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;
use rtc_protocol::{TodoItem, TodoStatus};
use serde::Deserialize;
use serde_json::{Value, json};

pub const NAME: &str = "todoWrite";

/// Most items a list may hold.
pub const MAX_TODOS: usize = 100;

const DESCRIPTION: &str = "Keep your task list for this conversation; the user sees it live. Each call replaces the whole list, so always send every item.
- content: the task, in the imperative (\"Compare the three offers\").
- status: pending, in_progress or completed. Mark a task in_progress when you start it and completed as soon as it is done.
- active_form: optional short form for a status bar (\"Comparing offers\").
Keep tasks to verifiable milestones; remove tasks that are no longer needed instead of marking them.";

pub fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "todos": {
                "type": "array", "maxItems": MAX_TODOS,
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "minLength": 1, "maxLength": 500},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                        "active_form": {"type": "string", "maxLength": 200}
                    },
                    "required": ["content", "status"],
                    "additionalProperties": false
                }
            }
        },
        "additionalProperties": false
    })
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: parameters(),
    }
}

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    todos: Vec<TodoItem>,
}

/// The new list; errors are for the model to read.
pub fn parse(arguments: &str) -> Result<Vec<TodoItem>, ArgumentError> {
    let args: Args = crate::builtins::parse_arguments(&parameters(), arguments)?;
    if let Some(i) = args.todos.iter().position(|t| t.content.trim().is_empty()) {
        return Err(format!("todos[{i}].content must say what to do").into());
    }
    Ok(args.todos)
}

/// What the model is told after a write.
pub fn summary(todos: &[TodoItem]) -> String {
    let count = |s: TodoStatus| todos.iter().filter(|t| t.status == s).count();
    format!(
        "Todo list updated: {} items ({} completed, {} in progress, {} pending).",
        todos.len(),
        count(TodoStatus::Completed),
        count(TodoStatus::InProgress),
        count(TodoStatus::Pending)
    )
}

crate::builtins::built_in!(TodoWrite, todo, |cx| async move {
    let todos = crate::tool::parsed!(parse(&cx.call.arguments));
    let result = serde_json::json!(summary(&todos));
    crate::features::interaction::service::todo_write(cx.session, todos).await?;
    Ok(crate::tool::CallOutcome::ok(result))
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_rules() {
        let todos = parse(r#"{"todos": [{"content": "Compare offers", "status": "in_progress", "active_form": "Comparing offers"}, {"content": "Book", "status": "pending"}]}"#).unwrap();
        assert_eq!(todos[0].status, TodoStatus::InProgress);
        assert_eq!(
            summary(&todos),
            "Todo list updated: 2 items (0 completed, 1 in progress, 1 pending)."
        );
        assert_eq!(parse("{}").unwrap(), vec![], "an empty list clears it");
        assert!(
            parse(r#"{"todos": [{"content": "x", "status": "done"}]}"#)
                .unwrap_err()
                .contains("status")
        );
        assert!(
            parse(r#"{"todos": [{"content": " ", "status": "pending"}]}"#)
                .unwrap_err()
                .contains("content")
        );
        assert!(
            parse(r#"{"todos": [{"content": "x", "status": "pending", "owner": "me"}]}"#)
                .unwrap_err()
                .contains("owner")
        );
    }
}
