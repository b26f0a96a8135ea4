//! v3 `system` tools to v4 built-ins, and other tools' inline params to
//! v4 bindings (design §7, "System resources to built-ins" and "Other
//! tools to `toolBindings`").

use std::collections::BTreeMap;

use rtc_protocol::{
    ArgumentSource, BuiltInTools, BuiltInToolsPatch, DynamicVariable, EndConversationConfig,
    EndMessageType, Expr, HumanHandoffConfig, LlmOutputType, Patch, SkipTurnConfig, Tool,
    ToolBinding, UpdateStateConfig, UpdateStateRule, ValueType,
};
use serde_json::{Map, Value};

use super::{Report, join};
use crate::tool_rules::{schema_properties, schema_required};

/// The v3 built-ins, by their `name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SystemKind {
    EndCall,
    SkipTurn,
    TransferToHuman,
    UpdateState,
}

/// A v3 `{id, type: "system", name, description, params}` resource.
#[derive(Debug, Clone)]
pub(crate) struct SystemTool {
    pub(crate) kind: SystemKind,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) params: Map<String, Value>,
}

/// One v4 built-in made from a system tool; `update_state` also says
/// which variables it may write.
#[derive(Debug, Clone)]
pub(crate) enum BuiltIn {
    End(EndConversationConfig),
    Skip(SkipTurnConfig),
    Human(HumanHandoffConfig),
    Update(UpdateStateConfig, Vec<String>),
}

impl BuiltIn {
    pub(crate) fn apply_to(self, tools: &mut BuiltInTools) {
        match self {
            Self::End(c) => tools.end_conversation = Some(c),
            Self::Skip(c) => tools.skip_turn = Some(c),
            Self::Human(c) => tools.request_human_handoff = Some(c),
            Self::Update(c, _) => tools.update_state = Some(c),
        }
    }

    /// Set in a stage's patch; the variables `update_state` may write.
    pub(crate) fn apply_to_patch(self, patch: &mut BuiltInToolsPatch) -> Option<Vec<String>> {
        match self {
            Self::End(c) => patch.end_conversation = Patch::Set(c),
            Self::Skip(c) => patch.skip_turn = Patch::Set(c),
            Self::Human(c) => patch.request_human_handoff = Patch::Set(c),
            Self::Update(c, writable) => {
                patch.update_state = Patch::Set(c);
                return Some(writable);
            }
        }
        None
    }
}

impl SystemTool {
    pub(crate) fn parse(doc: &Value) -> Result<Self, (String, String)> {
        let name = doc
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ("name".to_owned(), "a system tool needs a `name`".to_owned()))?;
        let kind = match name {
            "end_call" => SystemKind::EndCall,
            "skip_turn" => SystemKind::SkipTurn,
            "transfer_to_human" => SystemKind::TransferToHuman,
            "update_state" => SystemKind::UpdateState,
            other => {
                return Err((
                    "name".to_owned(),
                    format!("system tool `{other}` has no v4 built-in"),
                ));
            }
        };
        let params = match doc.get("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(("params".to_owned(), "params must be an object".to_owned())),
        };
        Ok(Self {
            kind,
            name: name.to_owned(),
            description: doc
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            params,
        })
    }

    /// The resource's params with the inline ones over them.
    pub(crate) fn merged(&self, inline: Option<&Map<String, Value>>) -> Map<String, Value> {
        let mut params = self.params.clone();
        if let Some(inline) = inline {
            for (k, v) in inline {
                params.insert(k.clone(), v.clone());
            }
        }
        params
    }

    /// The built-in this tool becomes at `path` (problems reported there).
    pub(crate) fn built_in(
        &self,
        inline: Option<&Map<String, Value>>,
        variables: &[DynamicVariable],
        path: &str,
        report: &mut Report,
    ) -> Option<BuiltIn> {
        let params = self.merged(inline);
        let description = self.description.clone();
        match self.kind {
            SystemKind::EndCall => {
                let message_type = match params.get("messageType").and_then(Value::as_str) {
                    None | Some("generated") => EndMessageType::Generated,
                    Some("custom") => EndMessageType::Custom,
                    Some("none") => EndMessageType::None,
                    Some(other) => {
                        report.problem(
                            join(path, "params/messageType"),
                            "invalid_param",
                            format!("messageType `{other}` is not generated, custom or none"),
                        );
                        return None;
                    }
                };
                Some(BuiltIn::End(EndConversationConfig {
                    description,
                    message_type,
                    custom_message: string_param(&params, "customMessage").unwrap_or_default(),
                    capture_reason: bool_param(&params, "captureReason").unwrap_or(false),
                    allow_end_interruption: bool_param(&params, "allowInterruption")
                        .unwrap_or(true),
                }))
            }
            SystemKind::SkipTurn => Some(BuiltIn::Skip(SkipTurnConfig { description })),
            SystemKind::TransferToHuman => Some(BuiltIn::Human(HumanHandoffConfig {
                description,
                message: string_param(&params, "message"),
            })),
            SystemKind::UpdateState => {
                let allowed: Vec<String> = match params.get("allowedVariables") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(items)) => items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                    Some(_) => {
                        report.problem(
                            join(path, "params/allowedVariables"),
                            "invalid_param",
                            "allowedVariables must be an array of variable names",
                        );
                        return None;
                    }
                };
                let names: Vec<String> = if allowed.is_empty() {
                    variables.iter().map(|v| v.name.clone()).collect()
                } else {
                    allowed
                };
                let mut rules = Vec::new();
                for (i, name) in names.iter().enumerate() {
                    let at = join(path, format!("params/allowedVariables/{i}"));
                    let Some(var) = variables.iter().find(|v| &v.name == name) else {
                        report.problem(
                            at,
                            "unknown_variable",
                            format!("variable `{name}` is not declared"),
                        );
                        continue;
                    };
                    let output_type = match var.value_type {
                        ValueType::String => LlmOutputType::String,
                        ValueType::Number => LlmOutputType::Number,
                        ValueType::Boolean => LlmOutputType::Boolean,
                        ValueType::Json => {
                            report.problem(
                                at,
                                "unmappable_variable_type",
                                format!("variable `{name}` is json; an llm leaf gives a string, number or boolean"),
                            );
                            continue;
                        }
                    };
                    let prompt = if var.description.is_empty() {
                        format!("The new value of {name}")
                    } else {
                        var.description.clone()
                    };
                    rules.push(UpdateStateRule {
                        variable: name.clone(),
                        expression: Expr::Llm {
                            prompt,
                            output_type,
                        },
                    });
                }
                Some(BuiltIn::Update(
                    UpdateStateConfig { description, rules },
                    names,
                ))
            }
        }
    }
}

pub(crate) fn string_param(params: &Map<String, Value>, key: &str) -> Option<String> {
    params.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn bool_param(params: &Map<String, Value>, key: &str) -> Option<bool> {
    params.get(key).and_then(Value::as_bool)
}

/// Who fills the parameters an inline value does not give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BindingUse {
    /// The model (assistants, stages, global bindings).
    Model,
    /// Nobody: a deterministic action (a required one is unmappable).
    Action,
}

/// An inline value's source: exactly `"{{x}}"` is variable x, another
/// string with `{{` a template, anything else a literal.
pub(crate) fn source_of(value: &Value) -> ArgumentSource {
    if let Some(s) = value.as_str() {
        if let Some(inner) = s.strip_prefix("{{").and_then(|r| r.strip_suffix("}}")) {
            let name = inner.trim();
            if !name.is_empty() && !name.contains(['{', '}']) {
                return ArgumentSource::Variable {
                    variable_name: name.to_owned(),
                };
            }
        }
        if s.contains("{{") {
            return ArgumentSource::Template {
                template: s.to_owned(),
            };
        }
    }
    ArgumentSource::Literal {
        value: value.clone(),
    }
}

/// The binding of `tool` with its inline params and result mapping.
pub(crate) fn binding_for(
    tool_id: &str,
    tool: &Tool,
    inline: Option<&Map<String, Value>>,
    result_mapping: Option<&Value>,
    usage: BindingUse,
    path: &str,
    report: &mut Report,
) -> Option<ToolBinding> {
    let mut argument_bindings = BTreeMap::new();
    let mut template_bindings = BTreeMap::new();
    let mut ok = true;
    if let Some(inline) = inline {
        for (k, v) in inline {
            let source = source_of(v);
            if tool.template_inputs.iter().any(|t| &t.name == k) {
                template_bindings.insert(k.clone(), source);
            } else {
                argument_bindings.insert(k.clone(), source);
            }
        }
    }
    let fallback = crate::tool_rules::empty_parameters();
    let schema = tool.parameters.as_ref().unwrap_or(&fallback);
    let required = schema_required(schema);
    for (name, _) in schema_properties(schema) {
        if argument_bindings.contains_key(name) {
            continue;
        }
        match usage {
            BindingUse::Model => {
                argument_bindings.insert(name.to_owned(), ArgumentSource::Model);
            }
            BindingUse::Action if required.contains(&name) => {
                report.problem(
                    join(path, format!("params/{name}")),
                    "missing_required_param",
                    format!(
                        "required parameter `{name}` of tool `{}` has no inline value; a deterministic action cannot ask the model",
                        tool.name
                    ),
                );
                ok = false;
            }
            BindingUse::Action => {}
        }
    }
    let mut result_assignments = BTreeMap::new();
    match result_mapping {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (var, p) in m {
                match p.as_str() {
                    Some(p) => {
                        result_assignments.insert(var.clone(), p.to_owned());
                    }
                    None => {
                        report.problem(
                            join(path, format!("resultMapping/{var}")),
                            "invalid_field",
                            "a result mapping value must be a path string",
                        );
                        ok = false;
                    }
                }
            }
        }
        Some(_) => {
            report.problem(
                join(path, "resultMapping"),
                "invalid_field",
                "resultMapping must be an object",
            );
            ok = false;
        }
    }
    ok.then(|| ToolBinding {
        tool_id: tool_id.to_owned(),
        argument_bindings,
        template_bindings,
        result_assignments,
        model_result_filter: None,
    })
}
