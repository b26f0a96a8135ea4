//! Realtime capability gating (R-RT-2..5): the shipped interfaces, the rules
//! of an interface's declaration, the compatibility report of an assistant
//! and the explicit cleanup that removes exactly the reported items.

use std::collections::BTreeMap;

use rtc_protocol::{
    Assistant, BuiltInToolName, CompatibilityIssue, FieldSchema, RealtimeConnection,
    RealtimeDialect, RealtimeFeatures, RealtimeInterface, RealtimePromptTools, RunMode, Tool,
    ToolKind, TurnDetection,
};

use crate::error::{Rule, ValidationError};
use crate::names::check_display_name;

/// Id of the shipped Qwen Audio Realtime interface.
pub const QWEN_AUDIO_REALTIME: &str = "qwen-audio-realtime";
/// Id of the shipped StepFun Prompt Realtime interface.
pub const STEPFUN_REALTIME: &str = "stepfun-realtime";

/// The interfaces every workspace sees, with the seed's declarations.
pub fn shipped_interfaces() -> Vec<RealtimeInterface> {
    let make = |id: &str,
                name: &str,
                provider: &str,
                tools: RealtimePromptTools,
                connection: RealtimeConnection| RealtimeInterface {
        id: Some(id.to_owned()),
        name: name.to_owned(),
        provider: provider.to_owned(),
        field_schema: FieldSchema {
            features: RealtimeFeatures {
                realtime_prompt_tools: tools,
                extra: Default::default(),
            },
            extra: Default::default(),
        },
        connection: Some(connection),
        shipped: true,
        created_at: None,
        updated_at: None,
    };
    vec![
        make(
            QWEN_AUDIO_REALTIME,
            "Qwen Audio Realtime",
            "qwen",
            RealtimePromptTools {
                tool_types: vec![ToolKind::Http, ToolKind::Mcp, ToolKind::Client],
                built_in_tools: vec![
                    BuiltInToolName::EndConversation,
                    BuiltInToolName::UpdateState,
                    BuiltInToolName::RequestHumanHandoff,
                ],
            },
            RealtimeConnection {
                dialect: RealtimeDialect::Qwen,
                url: "wss://dashscope.aliyuncs.com/api-ws/v1/realtime".to_owned(),
                model: "qwen3.5-omni-flash-realtime".to_owned(),
                voice: Some("Cherry".to_owned()),
                input_rate: Some(16_000),
                output_rate: Some(24_000),
                api_key: "{{secret__dashscope_api_key}}".to_owned(),
                turn_detection: TurnDetection::default(),
                transcription_model: None,
            },
        ),
        make(
            STEPFUN_REALTIME,
            "StepFun Prompt Realtime",
            "stepfun",
            RealtimePromptTools::default(),
            RealtimeConnection {
                dialect: RealtimeDialect::Stepfun,
                url: "wss://api.stepfun.com/v1/realtime".to_owned(),
                model: "step-audio-2".to_owned(),
                voice: None,
                input_rate: Some(24_000),
                output_rate: Some(24_000),
                api_key: "{{secret__stepfun_api_key}}".to_owned(),
                turn_detection: TurnDetection::default(),
                transcription_model: None,
            },
        ),
    ]
}

/// Whether `id` names a shipped interface.
pub fn is_shipped(id: &str) -> bool {
    id == QWEN_AUDIO_REALTIME || id == STEPFUN_REALTIME
}

/// The lowest and highest provider rate accepted, in Hz.
pub const RATE_RANGE: std::ops::RangeInclusive<u32> = 8_000..=48_000;

/// An operator-defined interface: a name, no `skipTurn` (R-RT-3), and a
/// connection that can be used: a `ws(s)://` URL with a host, a model, an
/// API key that is one reference to an existing secret, rates in range,
/// turn detection the dialect has.
pub fn validate_interface(iface: &RealtimeInterface, secret_exists: &dyn Fn(&str) -> bool) -> Rule {
    check_display_name(&iface.name, "name", 200)?;
    if let Some(c) = &iface.connection {
        check_connection(c, secret_exists)?;
    }
    let declared = &iface
        .field_schema
        .features
        .realtime_prompt_tools
        .built_in_tools;
    if let Some(i) = declared
        .iter()
        .position(|b| *b == BuiltInToolName::SkipTurn)
    {
        return Err(ValidationError::new(
            "pipeline_only",
            format!("fieldSchema.features.realtimePromptTools.builtInTools[{i}]"),
            "`skipTurn` is only available in the pipeline run mode: a realtime model may already have spoken",
        ));
    }
    Ok(())
}

fn check_connection(c: &RealtimeConnection, secret_exists: &dyn Fn(&str) -> bool) -> Rule {
    let url = url::Url::parse(&c.url).ok().filter(|u| {
        (u.scheme() == "ws" || u.scheme() == "wss") && u.host_str().is_some_and(|h| !h.is_empty())
    });
    if url.is_none() || c.url.len() > 2048 {
        return Err(ValidationError::new(
            "invalid_url",
            "connection.url",
            "`connection.url` must be a `wss://` (or `ws://`) URL with a host, at most 2,048 characters",
        ));
    }
    check_display_name(&c.model, "connection.model", 200)?;
    if let Some(voice) = &c.voice {
        check_display_name(voice, "connection.voice", 100)?;
    }
    for (rate, field) in [
        (c.input_rate, "connection.inputRate"),
        (c.output_rate, "connection.outputRate"),
    ] {
        if let Some(rate) = rate.filter(|r| !RATE_RANGE.contains(r)) {
            return Err(ValidationError::new(
                "out_of_range",
                field,
                format!("rates are 8000 to 48000 Hz; got {rate}"),
            ));
        }
    }
    // What the dialect's provider takes: a rate it does not would only
    // fail at connect.
    let (inputs, outputs) = c.dialect.supported_rates();
    for (rate, field, supported) in [
        (c.input_rate, "connection.inputRate", inputs),
        (c.output_rate, "connection.outputRate", outputs),
    ] {
        if let Some(rate) = rate.filter(|r| !supported.contains(r)) {
            let list: Vec<String> = supported.iter().map(u32::to_string).collect();
            return Err(ValidationError::new(
                "unsupported_rate",
                field,
                format!(
                    "the {} dialect's provider takes {} Hz PCM here, not {rate} (the server resamples the host's audio to it)",
                    c.dialect.as_str(),
                    list.join(" or ")
                ),
            ));
        }
    }
    let secret = api_key_secret(&c.api_key);
    let Some(secret) = secret else {
        return Err(ValidationError::new(
            "invalid_placeholder",
            "connection.apiKey",
            "`connection.apiKey` must be one `{{secret__name}}` reference: store the key as a workspace secret",
        ));
    };
    if !secret_exists(&secret) {
        return Err(ValidationError::new(
            "unknown_secret",
            "connection.apiKey",
            format!("secret `{secret}` does not exist in this workspace"),
        ));
    }
    if c.dialect == RealtimeDialect::Stepfun
        && matches!(c.turn_detection, TurnDetection::SemanticVad { .. })
    {
        return Err(ValidationError::new(
            "unsupported",
            "connection.turnDetection.type",
            "StepFun realtime has no semantic VAD; use `server_vad` or `none`",
        ));
    }
    Ok(())
}

/// The secret an `apiKey` names, when it is exactly one
/// `{{secret__name}}` reference.
pub fn api_key_secret(api_key: &str) -> Option<String> {
    match crate::placeholders::parse(api_key, "connection.apiKey")
        .ok()?
        .as_slice()
    {
        [crate::placeholders::Placeholder::Secret(name)]
            if api_key == format!("{{{{{name}}}}}") =>
        {
            Some((*name).to_owned())
        }
        _ => None,
    }
}

/// The secret an interface's connection references, if any.
pub fn referenced_secret(iface: &RealtimeInterface) -> Option<String> {
    api_key_secret(&iface.connection.as_ref()?.api_key)
}

/// The items of `assistant` its realtime interface does not support. Empty
/// in the pipeline run mode. Bindings whose tool is unknown are left to
/// validation.
pub fn compatibility(
    assistant: &Assistant,
    tools: &BTreeMap<String, Tool>,
    iface: Option<&RealtimeInterface>,
) -> Vec<CompatibilityIssue> {
    if assistant.run_mode != RunMode::Realtime {
        return Vec::new();
    }
    let empty = RealtimePromptTools::default();
    let (caps, iface_name) = match iface {
        Some(i) => (
            &i.field_schema.features.realtime_prompt_tools,
            i.name.as_str(),
        ),
        None => (&empty, "the realtime interface"),
    };
    let mut issues = Vec::new();
    for (i, binding) in assistant.tool_bindings.iter().enumerate() {
        let Some(tool) = tools.get(&binding.tool_id) else {
            continue;
        };
        if !caps.tool_types.contains(&tool.kind) {
            issues.push(CompatibilityIssue {
                path: format!("toolBindings[{i}]"),
                code: "tool_type_unsupported".to_owned(),
                message: format!(
                    "{iface_name} does not support {} tools (tool `{}`)",
                    tool.kind.as_str(),
                    tool.name
                ),
            });
        }
    }
    for name in assistant.built_in_tools.enabled() {
        let path = format!("builtInTools.{}", name.as_str());
        if name == BuiltInToolName::SkipTurn {
            issues.push(CompatibilityIssue {
                path,
                code: "pipeline_only".to_owned(),
                message: "`skipTurn` is only available in the pipeline run mode".to_owned(),
            });
        } else if !caps.built_in_tools.contains(&name) {
            issues.push(CompatibilityIssue {
                path,
                code: "built_in_unsupported".to_owned(),
                message: format!(
                    "{iface_name} does not support the built-in tool `{}`",
                    name.as_str()
                ),
            });
        }
    }
    issues
}

/// Remove exactly the reported items from `assistant`.
pub fn cleanup(assistant: &mut Assistant, issues: &[CompatibilityIssue]) {
    let mut binding_indexes: Vec<usize> = issues
        .iter()
        .filter_map(|i| {
            i.path
                .strip_prefix("toolBindings[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect();
    binding_indexes.sort_unstable();
    for index in binding_indexes.into_iter().rev() {
        if index < assistant.tool_bindings.len() {
            assistant.tool_bindings.remove(index);
        }
    }
    for issue in issues {
        if let Some(name) = issue.path.strip_prefix("builtInTools.")
            && let Some(b) = BuiltInToolName::ALL.iter().find(|b| b.as_str() == name)
        {
            assistant.built_in_tools.remove(*b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rates the dialect's provider does not take are refused at save,
    /// naming the rates it does; the shipped interfaces pass.
    #[test]
    fn rates_follow_the_dialect() {
        for iface in shipped_interfaces() {
            assert!(
                validate_interface(&iface, &|_| true).is_ok(),
                "{}",
                iface.name
            );
        }
        let mut iface = shipped_interfaces().remove(1);
        let conn = iface.connection.as_mut().unwrap();
        conn.dialect = RealtimeDialect::Openai;
        conn.input_rate = Some(16_000);
        let e = validate_interface(&iface, &|_| true).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_str()),
            ("unsupported_rate", "connection.inputRate")
        );
        assert!(e.message.contains("24000"), "{}", e.message);
        let conn = iface.connection.as_mut().unwrap();
        conn.dialect = RealtimeDialect::Qwen;
        conn.output_rate = Some(16_000);
        let e = validate_interface(&iface, &|_| true).unwrap_err();
        assert_eq!(e.field, "connection.outputRate");
    }
}
