//! A tool run once from the editor (`POST /v1/tools/{id}/test`): an HTTP or
//! MCP tool called with sample arguments the way a session calls it — the
//! arguments checked against the tool's schema, its secrets revealed for
//! the call and scrubbed from the answer, the outbound guard applied — so
//! an operator sees what the model would see before any assistant uses
//! it. A bounded number run at once ([`TOOL_TEST_LIMITS`]).

use std::time::Instant;

use rtc_core::ValidationError;
use rtc_core::model_tools::schema_problems;
use rtc_protocol::{
    ArgumentSource, Tool, ToolBinding, ToolKind, ToolTestError, ToolTestRequest, ToolTestResult,
};
use rtc_session::registry::{RemoteCall, RemoteTools};
use rtc_session::tool::CallError;
use serde_json::{Map, Value};

use crate::fair_gate::TestQueueLimits;
use crate::{Runtime, RuntimeError};

/// Tool tests at once: 16 in the process, 4 of one workspace (more are
/// refused, `too_many_tool_tests`).
pub(crate) const TOOL_TEST_LIMITS: TestQueueLimits = TestQueueLimits {
    global: 16,
    per_workspace: 4,
    max_queued: 4,
};

impl Runtime {
    /// Run `tool` once with `request`'s arguments. A bad request is an
    /// `Err` naming its field; a failing tool is a result with `ok: false`.
    pub async fn test_tool(
        &self,
        workspace: &str,
        tool: &Tool,
        request: ToolTestRequest,
    ) -> Result<ToolTestResult, RuntimeError> {
        if tool.kind == ToolKind::Client {
            return Err(ValidationError::new(
                "client_tool_not_runnable",
                "type",
                "a client tool runs in the host app, not on the server: try it in the playground, which answers client tools by hand",
            )
            .into());
        }
        let args = request.arguments;
        if let Some(schema) = &tool.parameters {
            let problems = schema_problems(schema, &Value::Object(args.clone()));
            if !problems.is_empty() {
                return Err(ValidationError::new(
                    "invalid_arguments",
                    "arguments",
                    format!(
                        "the arguments do not match the tool's parameters: {}",
                        problems.join("; ")
                    ),
                )
                .into());
            }
        }
        let binding = test_binding(tool, request.inputs)?;
        let ticket = self
            .inner
            .tool_test_slots
            .admit(workspace, 1)
            .map_err(|r| RuntimeError::TooMany {
                code: "too_many_tool_tests",
                message: format!(
                    "the workspace has {} tool tests running and may have at most {}; wait for one to finish",
                    r.admitted, r.max
                ),
            })?
            .remove(0);
        let _slot = ticket.wait().await;
        let clock = Instant::now();
        let outcome = self
            .inner
            .executors
            .run(RemoteCall {
                workspace,
                tool,
                binding: &binding,
                args,
                vars: &Map::new(),
                progress: None,
            })
            .await;
        let duration_ms = u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(match outcome {
            Ok(output) => ToolTestResult {
                ok: true,
                result: Some(output.value),
                error: None,
                images: output.images.len(),
                duration_ms,
            },
            Err(CallError::Tool(message)) => ToolTestResult {
                ok: false,
                result: None,
                error: Some(ToolTestError {
                    code: "tool_error".to_owned(),
                    message,
                }),
                images: 0,
                duration_ms,
            },
            Err(CallError::Platform(e)) => return Err(e),
        })
    }
}

/// A binding that gives the tool's template inputs the request's values;
/// a required input without one is refused (`missing_input`).
fn test_binding(
    tool: &Tool,
    mut inputs: Map<String, Value>,
) -> Result<ToolBinding, ValidationError> {
    if let Some(unknown) = inputs
        .keys()
        .find(|k| !tool.template_inputs.iter().any(|t| &t.name == *k))
    {
        return Err(ValidationError::new(
            "unknown_input",
            format!("inputs.{unknown}"),
            format!("the tool has no template input `{unknown}`"),
        ));
    }
    let mut template_bindings = std::collections::BTreeMap::new();
    for input in &tool.template_inputs {
        match inputs.remove(&input.name) {
            Some(value) => {
                template_bindings.insert(input.name.clone(), ArgumentSource::Literal { value });
            }
            None if input.required => {
                return Err(ValidationError::new(
                    "missing_input",
                    format!("inputs.{}", input.name),
                    format!(
                        "the tool's template input `{}` is required: give it a value in `inputs`",
                        input.name
                    ),
                ));
            }
            None => {}
        }
    }
    Ok(ToolBinding {
        tool_id: tool.id.clone().unwrap_or_default(),
        argument_bindings: Default::default(),
        template_bindings,
        result_assignments: Default::default(),
        model_result_filter: None,
    })
}
