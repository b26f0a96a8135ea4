//! What every built-in tool is made with: [`built_in!`] declares a tool's
//! [`ToolHandler`](crate::tool::ToolHandler) from its file's spec, and
//! [`parse_arguments`] checks the model's arguments against the schema.
//! The tools themselves live with their feature, one tool per file
//! (`crate::features::<feature>::tools`), running the call through the
//! feature's service; each feature offers its own through `Feature::tools`.
//!
//! Adding a built-in: write its file in its feature's folder (spec,
//! arguments, `built_in!`) and add one line to the feature's `tools`.

use rtc_core::model_tools::schema_problems;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Declares the [`ToolHandler`](crate::tool::ToolHandler) of the
/// built-in of this file: its spec is the file's `spec()`; a session
/// offers it when the assistant's `features.$feature` is on (or when
/// `offered` says so); `run` takes the call's [`ToolCx`](crate::registry::ToolCx).
macro_rules! built_in {
    ($ty:ident, $feature:ident, |$cx:ident| $run:expr) => {
        $crate::builtins::built_in!(
            $ty,
            offered = |offer| offer.assistant.features.$feature,
            run = |$cx| $run
        );
    };
    ($ty:ident, offered = |$offer:ident| $offered:expr, run = |$cx:ident| $run:expr) => {
        /// The handler of this built-in.
        pub(crate) struct $ty;

        impl $crate::tool::ToolHandler<$crate::Inner> for $ty {
            fn spec(&self) -> rtc_core::llm::ToolSpec {
                spec()
            }

            fn offered(&self, $offer: &$crate::tool::Offer<'_>) -> bool {
                $offered
            }

            fn call<'a>(
                &'a self,
                $cx: $crate::tool::ToolCx<'a>,
            ) -> futures::future::BoxFuture<
                'a,
                Result<$crate::tool::CallOutcome, $crate::RuntimeError>,
            > {
                Box::pin($run)
            }
        }
    };
}
pub(crate) use built_in;

/// Why the model's arguments to a built-in are refused, in words the model
/// can act on (it becomes the call's error result).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ArgumentError(pub String);

impl From<String> for ArgumentError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for ArgumentError {
    fn from(message: &str) -> Self {
        Self(message.to_owned())
    }
}

impl std::ops::Deref for ArgumentError {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<ArgumentError> for String {
    fn from(e: ArgumentError) -> Self {
        e.0
    }
}

/// The model's arguments, validated against `schema`, then typed. The
/// message names what is wrong so the model can correct its call.
pub(crate) fn parse_arguments<T: DeserializeOwned>(
    schema: &Value,
    arguments: &str,
) -> Result<T, ArgumentError> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ArgumentError(format!("the arguments are not JSON: {e}")))?;
    let problems = schema_problems(schema, &value);
    if !problems.is_empty() {
        return Err(ArgumentError(format!(
            "invalid arguments: {}",
            problems.join("; ")
        )));
    }
    serde_json::from_value(value).map_err(|e| ArgumentError(format!("invalid arguments: {e}")))
}
