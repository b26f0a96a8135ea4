//! The kernel's tool registry with the runtime's features: reserved
//! names, shadowing, the order of the built-ins.

use std::collections::BTreeMap;

use rtc_core::llm::ToolSpec;
use rtc_protocol::{Assistant, BuiltInToolName, Tool};
use serde_json::json;

use crate::is_reserved_tool_name as is_reserved;
use crate::registry::{SessionTools, reserved_names};

/// The features' built-ins, in registration order.
fn built_ins() -> Vec<ToolSpec> {
    crate::features::registered()
        .iter()
        .flat_map(|f| f.tools())
        .map(|h| h.spec())
        .collect()
}

/// Every built-in is reserved (the task tools among them), and nothing
/// else: the registry is the one list.
#[test]
fn reserved_names_are_the_registrys_built_ins() {
    let reserved = reserved_names(&crate::features::registered());
    let built_ins = built_ins();
    for spec in &built_ins {
        assert!(is_reserved(&spec.name), "{}", spec.name);
    }
    for b in BuiltInToolName::ALL {
        assert!(is_reserved(b.as_str()));
    }
    for name in ["delegate_task", "get_task_status", "cancel_task"] {
        assert!(is_reserved(name), "{name}");
    }
    assert_eq!(
        reserved.len(),
        built_ins.len() + BuiltInToolName::ALL.len(),
        "no name is registered twice"
    );
    assert!(!is_reserved("lookup_order"));
}

/// A stored binding whose tool carries a built-in's name (saved before
/// the name was reserved) is not offered: it cannot shadow the built-in.
#[tokio::test]
async fn a_binding_cannot_shadow_a_built_in() {
    let tool: Tool = serde_json::from_value(json!({"id": "t1", "name": "askUser",
        "type": "client", "client": {"functionName": "f"}}))
    .unwrap();
    let assistant: Assistant = serde_json::from_value(json!({"name": "a",
        "toolBindings": [{"toolId": "t1"}]}))
    .unwrap();
    let session_tools = BTreeMap::from([("t1".to_owned(), tool)]);
    let dir = tempfile::tempdir().unwrap();
    let store = crate::test_support::sqlite_store(dir.path()).await;
    let rt = crate::Runtime::new(store, crate::test_support::config());
    let tools = SessionTools::for_session(&rt.inner, &assistant, &session_tools, None);
    let names: Vec<String> = tools.specs().iter().map(|s| s.name.clone()).collect();
    assert_eq!(
        names.iter().filter(|n| *n == "askUser").count(),
        1,
        "{names:?}"
    );
    assert!(tools.find("askUser").is_some());
}

/// The features give the model their built-ins in the order it always
/// saw them: the registration order of `crate::features` is also this.
#[test]
fn the_built_ins_keep_their_order() {
    let built_ins = built_ins();
    let names: Vec<&str> = built_ins.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "subAgent",
            "listSubAgent",
            "getSubAgentMessage",
            "stopSubAgent",
            "sendMessageToSubAgent",
            "askUser",
            "todoWrite",
            "webSearch",
            "webFetch",
            "createGoal",
            "completeGoal",
            "cancelGoal",
            "createLoop",
            "cancelLoop",
            "completeLoop",
            "listLoops",
            "pauseLoop",
            "resumeLoop",
            "saveMemory",
            "updateMemory",
            "deleteMemory",
            "listMemories",
            "searchMemory",
            "delegate_task",
            "get_task_status",
            "cancel_task",
        ]
    );
}
