//! What the parts of a workflow run with (design §3.2): each agent stage
//! compiled to the assistant its model turns run, the workflow's globals
//! as an assistant (variables, the small model's provider), and the
//! resources a workflow references ("in use" on delete).

use std::collections::BTreeSet;

use rtc_protocol::{
    AgentNode, Assistant, BuiltInTools, Features, LlmConfig, TransferTarget, Workflow, WorkflowNode,
};

/// No model built-in families in a workflow stage: a stage offers exactly
/// the platform built-ins and bindings the workflow gives it.
const NO_FEATURES: Features = Features {
    sub_agents: false,
    ask_user: false,
    todo: false,
    goals: false,
    loops: false,
    web_search: false,
    web_fetch: false,
    memory: false,
};

/// The workflow's globals as an assistant: name, model, prompt,
/// variables, built-ins and bindings (no first message, no startup
/// actions).
pub fn base_assistant(w: &Workflow) -> Assistant {
    Assistant {
        id: w.id.clone(),
        name: w.name.clone(),
        description: String::new(),
        run_mode: w.run_mode.unwrap_or_default(),
        realtime_interface_id: w.realtime_interface_id.clone(),
        // Workflows get no voice in v1 (design voice-pipeline.md §4(a)).
        speech: None,
        llm: w.llm.clone().unwrap_or_default(),
        system_prompt: w.system_prompt.clone().unwrap_or_default(),
        first_message: None,
        dynamic_variables: w.variables().to_vec(),
        built_in_tools: w.built_in_tools.clone().unwrap_or_default(),
        tool_bindings: w.bindings().to_vec(),
        startup_actions: Vec::new(),
        task_backend_id: None,
        features: NO_FEATURES,
        created_at: None,
        updated_at: None,
    }
}

/// The assistant an agent stage's turns run with: the global prompt plus
/// the node's, the global built-ins patched by the node's, the global
/// bindings then the node's, the node's model settings over the
/// workflow's. An `independent` stage has only its own prompt, built-ins
/// and bindings.
pub fn stage_assistant(w: &Workflow, node: &AgentNode) -> Assistant {
    let mut a = base_assistant(w);
    let patch = node.built_in_tools.clone().unwrap_or_default();
    let own_bindings = node.tool_bindings.clone().unwrap_or_default();
    if node.is_independent() {
        a.system_prompt = node.prompt.clone();
        a.built_in_tools = patch.apply(&BuiltInTools::default());
        a.tool_bindings = own_bindings;
    } else {
        a.system_prompt = join_prompts(&a.system_prompt, &node.prompt);
        a.built_in_tools = patch.apply(&a.built_in_tools);
        a.tool_bindings.extend(own_bindings);
    }
    if let Some(llm) = &node.llm {
        a.llm = merge_llm(&a.llm, llm);
    }
    a
}

fn join_prompts(global: &str, stage: &str) -> String {
    match (global.trim().is_empty(), stage.trim().is_empty()) {
        (true, _) => stage.to_owned(),
        (false, true) => global.to_owned(),
        (false, false) => format!("{global}\n\n{stage}"),
    }
}

/// `over`'s settings, each falling back to `base`'s.
fn merge_llm(base: &LlmConfig, over: &LlmConfig) -> LlmConfig {
    LlmConfig {
        provider: over.provider.clone().or_else(|| base.provider.clone()),
        model: over.model.clone().or_else(|| base.model.clone()),
        temperature: over.temperature.or(base.temperature),
        max_tokens: over.max_tokens.or(base.max_tokens),
    }
}

/// Ids of every tool the workflow binds (globally, in stages, in actions).
pub fn referenced_tools(w: &Workflow) -> BTreeSet<String> {
    let mut ids: BTreeSet<String> = w.bindings().iter().map(|b| b.tool_id.clone()).collect();
    for node in &w.nodes {
        match node {
            WorkflowNode::Agent(a) => {
                ids.extend(a.tool_bindings.iter().flatten().map(|b| b.tool_id.clone()))
            }
            WorkflowNode::Action(a) => {
                ids.insert(a.binding.tool_id.clone());
            }
            _ => {}
        }
    }
    ids
}

/// Ids of the assistants the workflow transfers to.
pub fn referenced_assistants(w: &Workflow) -> BTreeSet<String> {
    w.nodes
        .iter()
        .filter_map(|n| match n {
            WorkflowNode::Transfer(t) => match &t.target {
                TransferTarget::Assistant { assistant_id, .. } => Some(assistant_id.clone()),
                TransferTarget::Human => None,
            },
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtc_protocol::BuiltInToolName;

    fn example() -> Workflow {
        serde_json::from_str(include_str!(
            "../../cli/tests/fixtures/workflows/order_support_v4.json"
        ))
        .expect("the design's example parses")
    }

    fn agent<'a>(w: &'a Workflow, id: &str) -> &'a AgentNode {
        match w.node(id) {
            Some(WorkflowNode::Agent(a)) => a,
            _ => panic!("{id} is not an agent"),
        }
    }

    #[test]
    fn a_stage_gets_the_global_prompt_and_its_patched_built_ins() {
        let w = example();
        let a = stage_assistant(&w, agent(&w, "greet"));
        assert_eq!(
            a.system_prompt,
            "You are Acme's support agent. Be brief.\n\nAsk for the order number."
        );
        assert_eq!(
            a.built_in_tools.enabled(),
            [
                BuiltInToolName::EndConversation,
                BuiltInToolName::UpdateState,
                BuiltInToolName::SkipTurn
            ]
        );
        assert_eq!(a.llm.model.as_deref(), Some("gpt-4o-mini"));
        assert!(!a.features.ask_user && !a.features.web_search);
    }

    #[test]
    fn null_disables_a_global_built_in_and_an_independent_stage_stands_alone() {
        let mut w = example();
        let WorkflowNode::Agent(greet) = &mut w.nodes[0] else {
            panic!("greet")
        };
        let mut patch = greet.built_in_tools.clone().unwrap_or_default();
        patch.end_conversation = rtc_protocol::Patch::Disable;
        greet.built_in_tools = Some(patch);
        greet.llm = Some(LlmConfig {
            model: Some("stage-y".into()),
            ..LlmConfig::default()
        });
        let a = stage_assistant(&w, agent(&w, "greet"));
        assert!(a.built_in_tools.end_conversation.is_none());
        assert_eq!(a.llm.model.as_deref(), Some("stage-y"));
        assert_eq!(a.llm.temperature, Some(0.3), "unset fields fall back");

        let WorkflowNode::Agent(greet) = &mut w.nodes[0] else {
            panic!("greet")
        };
        greet.independent = Some(true);
        let a = stage_assistant(&w, agent(&w, "greet"));
        assert_eq!(a.system_prompt, "Ask for the order number.");
        assert!(a.built_in_tools.end_conversation.is_none() && a.tool_bindings.is_empty());
        assert!(a.built_in_tools.skip_turn.is_some());
    }

    #[test]
    fn references_cover_actions_and_transfers() {
        let w = example();
        assert_eq!(
            referenced_tools(&w).into_iter().collect::<Vec<_>>(),
            ["tool_query_order"]
        );
        assert!(referenced_assistants(&w).is_empty());
    }
}
