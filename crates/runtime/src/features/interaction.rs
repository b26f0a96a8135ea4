//! Talking with the user beyond answers: `askUser` questions and the
//! `todoWrite` list.

use std::sync::Arc;

use crate::builtins;
use crate::feature::Feature;
use crate::tool::ToolHandler;

pub(crate) struct Interaction;

impl Feature for Interaction {
    fn name(&self) -> &'static str {
        "interaction"
    }

    fn tools(&self) -> Vec<Arc<dyn ToolHandler>> {
        vec![
            Arc::new(builtins::ask_user::AskUser),
            Arc::new(builtins::todo_write::TodoWrite),
        ]
    }
}
