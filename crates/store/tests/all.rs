//! The storage suite, run on SQLite and on PostgreSQL alike.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use rtc_protocol::{Assistant, McpServer, PendingQuestion, TodoItem, Tool};
use rtc_store::{
    MasterKey, ResourceKind, SecretBox, SessionRecords, SessionUpdate, Store, StoreError, Unsigned,
};
use rtc_testkit::{Engine, TestDatabase};
use serde_json::json;

/// Define one test per engine from one body.
macro_rules! on_both {
    ($name:ident, |$store:ident| $body:block) => {
        mod $name {
            use super::*;

            async fn run($store: Store) -> anyhow::Result<()> $body

            #[tokio::test]
            async fn sqlite() -> anyhow::Result<()> {
                with_store(Engine::Sqlite, run).await
            }

            #[tokio::test]
            async fn postgres() -> anyhow::Result<()> {
                with_store(Engine::Postgres, run).await
            }
        }
    };
}

async fn with_store<F, Fut>(engine: Engine, f: F) -> anyhow::Result<()>
where
    F: FnOnce(Store) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let Some(db) = TestDatabase::new(engine).await? else {
        return Ok(());
    };
    let store = Store::connect(&db.url, SecretBox::new(&MasterKey::generate())).await?;
    store.migrate().await?;
    store.migrate().await?; // idempotent
    let result = f(store.clone()).await;
    store.close().await;
    result
}

fn tool(name: &str) -> Tool {
    serde_json::from_value(json!({
        "name": name, "type": "http",
        "parameters": {"type": "object", "properties": {}},
        "http": {"method": "GET", "url": "https://example.com", "headers": {"X-Key": "{{secret__key}}"}}
    }))
    .unwrap()
}

on_both!(documents_round_trip_per_workspace, |store| {
    store.create_workspace("ws_a", "A", "key-a").await?;
    store.create_workspace("ws_b", "B", "key-b").await?;
    let saved = store.insert("ws_a", None, tool("lookup")).await?;
    let id = saved.id.clone().unwrap();
    assert!(id.starts_with("tool_"));
    assert!(saved.created_at.is_some());
    let got: Tool = store.get("ws_a", &id).await?.unwrap();
    assert_eq!(got, saved);
    assert!(
        store.get::<Tool>("ws_b", &id).await?.is_none(),
        "workspaces are isolated"
    );
    assert!(store.list::<Tool>("ws_b").await?.is_empty());
    assert_eq!(store.list::<Tool>("ws_a").await?.len(), 1);
    assert!(store.update("ws_b", &id, tool("x")).await?.is_none());
    let updated = store.update("ws_a", &id, tool("renamed")).await?.unwrap();
    assert_eq!(updated.name, "renamed");
    assert_eq!(updated.created_at, saved.created_at);
    assert!(!store.delete::<Tool>("ws_b", &id).await?);
    assert!(store.delete::<Tool>("ws_a", &id).await?);
    assert!(store.get::<Tool>("ws_a", &id).await?.is_none());
    Ok(())
});

on_both!(explicit_ids_are_unique, |store| {
    store.create_workspace("ws_a", "A", "key-a").await?;
    store
        .insert("ws_a", Some("tool_query_order".into()), tool("q"))
        .await?;
    let err = store
        .insert("ws_a", Some("tool_query_order".into()), tool("q"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyExists(_)));
    Ok(())
});

on_both!(references_protect_resources_in_use, |store| {
    store.create_workspace("ws_a", "A", "key-a").await?;
    store.put_secret("ws_a", "secret__key", "v").await?;
    let t = store.insert("ws_a", None, tool("lookup")).await?;
    let tool_id = t.id.unwrap();
    let a: Assistant =
        serde_json::from_value(json!({"name": "A", "toolBindings": [{"toolId": tool_id}]}))?;
    let a = store.insert("ws_a", None, a).await?;
    let err = store.delete::<Tool>("ws_a", &tool_id).await.unwrap_err();
    let StoreError::InUse { referrers } = err else {
        panic!("{err}")
    };
    assert_eq!(referrers[0].kind, ResourceKind::Assistant);
    assert!(matches!(
        store.delete_secret("ws_a", "secret__key").await,
        Err(StoreError::InUse { .. })
    ));
    store
        .delete::<Assistant>("ws_a", a.id.as_deref().unwrap())
        .await?;
    assert!(store.delete::<Tool>("ws_a", &tool_id).await?);
    assert!(store.delete_secret("ws_a", "secret__key").await?);
    Ok(())
});

on_both!(secrets_are_sealed_and_listed_by_name, |store| {
    store.create_workspace("ws_a", "A", "key-a").await?;
    store.create_workspace("ws_b", "B", "key-b").await?;
    let (_, created) = store.put_secret("ws_a", "secret__token", "hunter2").await?;
    assert!(created);
    let (info, created) = store.put_secret("ws_a", "secret__token", "hunter3").await?;
    assert!(!created);
    assert_eq!(info.name, "secret__token");
    assert_eq!(
        store
            .reveal_secret("ws_a", "secret__token")
            .await?
            .unwrap()
            .expose(),
        "hunter3"
    );
    assert!(
        store
            .reveal_secret("ws_b", "secret__token")
            .await?
            .is_none()
    );
    assert_eq!(store.list_secrets("ws_a").await?.len(), 1);
    assert!(store.list_secrets("ws_b").await?.is_empty());
    let debug = format!("{:?}", store.reveal_secret("ws_a", "secret__token").await?);
    assert!(!debug.contains("hunter3"));
    Ok(())
});

on_both!(workspaces_by_hashed_key, |store| {
    store.create_workspace("ws_a", "A", "key-a").await?;
    assert_eq!(store.workspace_by_key("key-a").await?.unwrap().id, "ws_a");
    assert!(store.workspace_by_key("key-b").await?.is_none());
    assert!(store.rotate_workspace_key("ws_a", "key-a2").await?);
    assert!(store.workspace_by_key("key-a").await?.is_none());
    assert_eq!(store.workspace_by_key("key-a2").await?.unwrap().name, "A");
    assert_eq!(store.list_workspaces().await?.len(), 1);
    Ok(())
});

on_both!(settings_insert_once, |store| {
    assert_eq!(store.setting_or_insert("admin", "first").await?, "first");
    assert_eq!(store.setting_or_insert("admin", "second").await?, "first");
    store.set_setting("admin", "third").await?;
    assert_eq!(store.setting("admin").await?.as_deref(), Some("third"));
    Ok(())
});

on_both!(mcp_server_documents_keep_transport, |store| {
    store.create_workspace("ws_a", "A", "key-a").await?;
    let s: McpServer = serde_json::from_value(
        json!({"name": "e", "transport": {"type": "stdio", "command": "node", "args": ["x"], "env": {"A": "1"}}}),
    )?;
    let saved = store.insert("ws_a", None, s.clone()).await?;
    let got: McpServer = store
        .get("ws_a", saved.id.as_deref().unwrap())
        .await?
        .unwrap();
    assert_eq!(got.transport, s.transport);
    Ok(())
});

on_both!(concurrent_writers_do_not_fail, |store| {
    store.create_workspace("ws_a", "A", "key-a").await?;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..24 {
        let store = store.clone();
        tasks.spawn(async move {
            store
                .insert("ws_a", None, tool(&format!("t{i}")))
                .await
                .map(|_| ())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    assert_eq!(store.list::<Tool>("ws_a").await?.len(), 24);
    Ok(())
});

fn message(id: &str, role: rtc_protocol::MessageRole, content: &str) -> rtc_protocol::Message {
    rtc_protocol::Message {
        id: id.into(),
        role,
        content: content.into(),
        tool_calls: vec![],
        tool_call_id: None,
        name: None,
        source: None,
        interrupted: false,
        images: vec![],
        created_at: "t".into(),
    }
}

on_both!(sessions_messages_and_events, |store| {
    use rtc_protocol::{EventBody, MessageRole, SessionEvent, SessionStatus};
    store.create_workspace("ws_a", "A", "key-a").await?;
    let vars = serde_json::Map::from_iter([("tenant".to_owned(), json!("acme"))]);
    let config = json!({"assistant": {"name": "x"}});
    let s = store
        .create_session(rtc_store::NewSession {
            id: "sess_1",
            workspace_id: "ws_a",
            assistant_id: "asst_1",
            parent_id: None,
            root_id: "sess_1",
            user_id: Some("u1"),
            title: None,
            variables: &vars,
            config: &config.to_string(),
            client_token: "ct-1",
            workflow_id: None,
            owner: None,
        })
        .await?;
    assert_eq!(s.status, SessionStatus::Active);
    assert_eq!(s.variables, vars);
    assert!(
        store.session("ws_b", "sess_1").await?.is_none(),
        "scoped by workspace"
    );
    assert_eq!(
        store.check_client_token("sess_1", "ct-1").await?.as_deref(),
        Some("ws_a")
    );
    assert!(store.check_client_token("sess_1", "ct-2").await?.is_none());
    assert_eq!(
        store
            .append_message("sess_1", &message("m1", MessageRole::User, "hi"))
            .await?,
        1
    );
    assert_eq!(
        store
            .append_message("sess_1", &message("m2", MessageRole::Assistant, "hello"))
            .await?,
        2
    );
    let history = store.messages("sess_1").await?;
    assert_eq!(
        history.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        ["m1", "m2"]
    );
    // A message replaced keeps its place (a realtime answer marked interrupted).
    let mut heard = history[1].clone();
    heard.interrupted = true;
    assert!(store.replace_message("sess_1", &heard).await?);
    assert!(
        !store.replace_message("sess_2", &heard).await?,
        "only in its session"
    );
    let history = store.messages("sess_1").await?;
    assert_eq!(history[1], heard);
    assert_eq!(history[0].id, "m1");
    for seq in 1..=3 {
        let ev = SessionEvent {
            session_id: "sess_1".into(),
            seq,
            timestamp: String::new(),
            test_mode: seq == 2,
            body: EventBody::error("test", seq.to_string()),
        };
        store.append_event(&ev, 1_000 + seq).await?;
    }
    assert_eq!(store.last_event_seq("sess_1").await?, 3);
    let after = store.events_after("sess_1", 1, 10).await?;
    assert_eq!(after.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(after[0].body, EventBody::error("test", "2"));
    let marks: Vec<bool> = after.iter().map(|e| e.test_mode).collect();
    assert_eq!(marks, [true, false], "a test-mode mark is kept");
    store.set_turn_running("sess_1", true).await?;
    assert_eq!(store.sessions_with_running_turn().await?, ["sess_1"]);
    store.set_turn_running("sess_1", false).await?;
    assert!(store.sessions_with_running_turn().await?.is_empty());
    store
        .set_session_status(
            "sess_1",
            SessionStatus::Ended,
            Some("user said bye"),
            Some("model"),
        )
        .await?;
    let ended = store.session_by_id("sess_1").await?.unwrap();
    assert_eq!(
        (
            ended.status,
            ended.end_reason.as_deref(),
            ended.ended_by.as_deref()
        ),
        (SessionStatus::Ended, Some("user said bye"), Some("model"))
    );
    assert_eq!(store.list_sessions("ws_a", 10).await?.len(), 1);

    // Session-row changes written with records: todos, a pending question,
    // then the question cleared and the turn flag set, in one batch each.
    let todos: Vec<TodoItem> = serde_json::from_value(json!([
        {"content": "Compare offers", "status": "in_progress", "active_form": "Comparing"},
        {"content": "Book", "status": "pending"}]))?;
    let question: PendingQuestion = serde_json::from_value(json!({"callId": "call_1",
        "questions": [{"question": "Which?", "header": "Pick", "options": [
            {"label": "A", "description": "a"}, {"label": "B", "description": "b"}]}],
        "askedAt": "2026-11-30T00:00:00.000Z"}))?;
    let update = SessionUpdate {
        todos: Some(todos.clone()),
        pending_question: Some(Some(question.clone())),
        ..SessionUpdate::default()
    };
    let records = SessionRecords {
        session: "sess_1",
        message: None,
        events: &mut [],
        update: &update,
        at_millis: 5_000,
    };
    store.append_batch(&mut [records], None).await?;
    let row = store.session_by_id("sess_1").await?.unwrap();
    assert_eq!(
        (row.todos, row.pending_question, row.updated_at),
        (todos.clone(), Some(question), 5_000)
    );
    let update = SessionUpdate {
        pending_question: Some(None),
        turn_running: Some(true),
        ..SessionUpdate::default()
    };
    let records = SessionRecords {
        session: "sess_1",
        message: None,
        events: &mut [],
        update: &update,
        at_millis: 6_000,
    };
    store.append_batch(&mut [records], None).await?;
    let row = store.session_by_id("sess_1").await?.unwrap();
    assert_eq!(
        (row.todos, row.pending_question, row.turn_running),
        (todos, None, true)
    );
    Ok(())
});

// One batch over more sessions than one statement lists (the lists are
// chunked and padded): every session's events continue its own numbers,
// and on PostgreSQL every session is announced once.
on_both!(a_batch_numbers_messages_after_the_stored_ones, |store| {
    use rtc_protocol::MessageRole::{Assistant, User};
    use rtc_store::{SessionRecords, SessionUpdate};
    store.create_workspace("ws", "w", "k").await?;
    bare_session(&store, "ws", "sess_a").await?;
    bare_session(&store, "ws", "sess_b").await?;
    store
        .append_message("sess_a", &message("m1", User, "stored"))
        .await?;
    let (m2, m3, m4, gone) = (
        message("m2", Assistant, "two"),
        message("m3", User, "three"),
        message("m4", User, "b's first"),
        message("m5", User, "of a session that is gone"),
    );
    let update = SessionUpdate::default();
    let (mut e1, mut e2, mut e4) = (Vec::new(), Vec::new(), Vec::new());
    let mut e3 = vec![rtc_protocol::SessionEvent {
        session_id: "sess_gone".into(),
        seq: 0,
        timestamp: String::new(),
        test_mode: false,
        body: rtc_protocol::EventBody::error("test", "of a session that is gone"),
    }];
    let (e1, e2, e3, e4) = (&mut e1, &mut e2, &mut e3, &mut e4);
    let mut batch = vec![
        SessionRecords {
            session: "sess_a",
            message: Some(&m2),
            events: e1,
            update: &update,
            at_millis: 1,
        },
        SessionRecords {
            session: "sess_b",
            message: Some(&m4),
            events: e2,
            update: &update,
            at_millis: 1,
        },
        SessionRecords {
            session: "sess_gone",
            message: Some(&gone),
            events: e3,
            update: &update,
            at_millis: 1,
        },
        SessionRecords {
            session: "sess_a",
            message: Some(&m3),
            events: e4,
            update: &update,
            at_millis: 1,
        },
    ];
    let gone = store.append_batch(&mut batch, Some("inst_a")).await?;
    assert_eq!(gone, ["sess_gone"], "the dropped session is named");
    let ids = |ms: Vec<rtc_protocol::Message>| ms.into_iter().map(|m| m.id).collect::<Vec<_>>();
    assert_eq!(ids(store.messages("sess_a").await?), ["m1", "m2", "m3"]);
    assert_eq!(ids(store.messages("sess_b").await?), ["m4"]);
    assert!(store.messages("sess_gone").await?.is_empty());
    // The next single append goes on after the batch's.
    assert_eq!(
        store
            .append_message("sess_a", &message("m6", User, "six"))
            .await?,
        4
    );
    Ok(())
});

on_both!(a_batch_numbers_the_events_of_many_sessions, |store| {
    use futures::StreamExt;
    use rtc_protocol::{EventBody, SessionEvent};
    store.create_workspace("ws", "W", "key").await?;
    let ids: Vec<String> = (0..70).map(|i| format!("sess_{i:02}")).collect();
    for id in &ids {
        bare_session(&store, "ws", id).await?;
    }
    let event = |session: &str, text: &str| SessionEvent {
        session_id: session.into(),
        seq: 0,
        timestamp: String::new(),
        test_mode: false,
        body: EventBody::error("test", text),
    };
    // Every third session already has three events.
    for id in ids.iter().step_by(3) {
        for seq in 1..=3 {
            let mut ev = event(id, "old");
            ev.seq = seq;
            store.append_event(&ev, 1_000).await?;
        }
    }
    let mut writes = store.session_writes().await?.map(Box::pin);
    let update = SessionUpdate::default();
    let mut events: Vec<Vec<SessionEvent>> = ids
        .iter()
        .map(|id| vec![event(id, "a"), event(id, "b")])
        .collect();
    // A second record of the first session in the same batch goes on
    // after the first.
    let mut extra = vec![event(&ids[0], "c")];
    let mut batch: Vec<SessionRecords<'_>> = ids
        .iter()
        .zip(events.iter_mut())
        .map(|(id, events)| SessionRecords {
            session: id,
            message: None,
            events,
            update: &update,
            at_millis: 2_000,
        })
        .collect();
    batch.push(SessionRecords {
        session: &ids[0],
        message: None,
        events: &mut extra,
        update: &update,
        at_millis: 2_000,
    });
    assert!(
        store
            .append_batch(&mut batch, Some("inst_a"))
            .await?
            .is_empty()
    );
    drop(batch);
    for (i, id) in ids.iter().enumerate() {
        let base = if i % 3 == 0 { 3 } else { 0 };
        let stored = store.events_after(id, 0, 10).await?;
        let mut expected: Vec<i64> = (1..=base + 2).collect();
        if i == 0 {
            expected.push(base + 3);
        }
        assert_eq!(
            stored.iter().map(|e| e.seq).collect::<Vec<_>>(),
            expected,
            "{id}"
        );
    }
    assert_eq!(extra[0].seq, 6, "numbers are given back to the caller");
    if let Some(writes) = writes.as_mut() {
        let mut seen = std::collections::BTreeSet::new();
        while seen.len() < ids.len() {
            let write = tokio::time::timeout(std::time::Duration::from_secs(5), writes.next())
                .await?
                .expect("the listener stays up");
            assert_eq!(write.instance, "inst_a");
            assert!(
                seen.insert(write.session.clone()),
                "{} twice",
                write.session
            );
        }
        let more = tokio::time::timeout(std::time::Duration::from_millis(300), writes.next()).await;
        assert!(more.is_err(), "nothing more: {more:?}");
    }
    Ok(())
});

on_both!(memories_per_user_ranked_by_relevance, |store| {
    store.create_workspace("ws_m", "m", "key-m").await?;
    store.create_workspace("ws_n", "n", "key-n").await?;
    let ann = |c: &'static str| store.insert_memory("ws_m", "ann", c, &[]);
    ann("Ann prefers oat milk in her coffee").await?;
    let dog = ann("Ann's dog is called Biscuit; Biscuit is a beagle").await?;
    ann("Ann lives in Lisbon and works remotely").await?;
    store
        .insert_memory("ws_m", "bob", "Bob's dog is a poodle", &["pets".to_owned()])
        .await?;
    store
        .insert_memory("ws_n", "ann", "Another workspace's Ann has a dog too", &[])
        .await?;

    let found = store
        .search_memories("ws_m", "ann", "what is the DOG's name? biscuit", 5)
        .await?;
    assert_eq!(found[0].0.id, dog.id, "{found:?}");
    assert_eq!(
        found.len(),
        1,
        "other users and workspaces stay out: {found:?}"
    );
    assert!(found[0].1 > 0.0);
    let coffee = store
        .search_memories("ws_m", "ann", "coffee or Lisbon", 5)
        .await?;
    assert_eq!(coffee.len(), 2);
    assert!(
        store
            .search_memories("ws_m", "ann", "\"*)(", 5)
            .await?
            .is_empty(),
        "syntax is not injected"
    );
    let tagged = store.search_memories("ws_m", "bob", "pets", 5).await?;
    assert_eq!(tagged.len(), 1, "tags are searched");

    let updated = store
        .update_memory(
            "ws_m",
            "ann",
            &dog.id,
            Some("Ann's dog Biscuit died in 2026"),
            None,
        )
        .await?
        .unwrap();
    assert_eq!(updated.content, "Ann's dog Biscuit died in 2026");
    assert!(
        store
            .search_memories("ws_m", "ann", "beagle", 5)
            .await?
            .is_empty(),
        "the index follows updates"
    );
    assert!(
        store
            .update_memory("ws_m", "bob", &dog.id, Some("x"), None)
            .await?
            .is_none(),
        "not Bob's"
    );

    let (page, total) = store.list_memories("ws_m", "ann", 2, 0).await?;
    assert_eq!((page.len(), total), (2, 3));
    assert!(!store.delete_memory("ws_m", Some("bob"), &dog.id).await?);
    assert!(store.delete_memory("ws_m", Some("ann"), &dog.id).await?);
    assert!(
        store
            .search_memories("ws_m", "ann", "biscuit", 5)
            .await?
            .is_empty()
    );
    assert_eq!(store.delete_user_memories("ws_m", "ann").await?, 2);
    assert_eq!(store.list_memories("ws_m", "bob", 10, 0).await?.1, 1);
    Ok(())
});

/// A session with nothing but an id, in an existing workspace.
async fn bare_session(store: &Store, workspace: &str, id: &str) -> anyhow::Result<()> {
    let vars = serde_json::Map::new();
    store
        .create_session(new_session(id, workspace, &vars))
        .await?;
    Ok(())
}

/// A session of assistant `a` with `vars` and nothing else.
fn new_session<'a>(
    id: &'a str,
    workspace: &'a str,
    vars: &'a serde_json::Map<String, serde_json::Value>,
) -> rtc_store::NewSession<'a> {
    rtc_store::NewSession {
        id,
        workspace_id: workspace,
        assistant_id: "a",
        parent_id: None,
        root_id: id,
        user_id: None,
        title: None,
        variables: vars,
        config: "{}",
        client_token: "t",
        workflow_id: None,
        owner: None,
    }
}

on_both!(goals_are_saved_and_rewritten, |store| {
    store.create_workspace("ws_g", "g", "key-g").await?;
    bare_session(&store, "ws_g", "sess_g").await?;
    let mut goal = rtc_store::GoalRecord {
        id: "goal_1".into(),
        session_id: "sess_g".into(),
        condition: "three options compared".into(),
        status: rtc_protocol::GoalStatus::Active,
        max_turns: 5,
        completed_turns: 0,
        token_budget: Some(10_000),
        tokens_used: 0,
        deadline: None,
        reason: None,
        created_at: 1,
        updated_at: 1,
        lease_owner: Some("inst_a".into()),
        lease_until: Some(1_000),
        loop_id: Some("loop_1".into()),
    };
    store.save_goal(&goal).await?;
    // Leases: the owner renews; an expired lease is taken over once.
    assert_eq!(store.renew_goal_leases("inst_a", 2_000).await?, 1);
    assert!(
        store
            .claim_orphan_goals("inst_b", 1_500, 9_000, 10)
            .await?
            .is_empty()
    );
    let (won, lost) = tokio::join!(
        store.claim_orphan_goals("inst_b", 2_500, 9_000, 10),
        store.claim_orphan_goals("inst_c", 2_500, 9_000, 10)
    );
    let winners: Vec<_> = won?.into_iter().chain(lost?).collect();
    assert_eq!(winners.len(), 1, "one instance takes the goal over");
    let owner = winners[0].lease_owner.clone();
    assert_eq!(
        store.renew_goal_leases("inst_a", 3_000).await?,
        0,
        "the old owner lost it"
    );
    store.set_goal_lease("goal_1", "inst_a", 1_000).await?;
    goal.completed_turns = 5;
    goal.tokens_used = 1_234;
    goal.status = rtc_protocol::GoalStatus::Exhausted;
    goal.reason = Some("max_turns reached".into());
    goal.updated_at = 2;
    goal.lease_owner = owner;
    store.save_goal(&goal).await?;
    goal.lease_owner = Some("inst_a".into());
    assert_eq!(
        store.goals("sess_g").await?,
        [goal],
        "a rewrite keeps the lease"
    );
    assert!(store.goals("sess_other").await?.is_empty());
    Ok(())
});

on_both!(loop_ticks_are_claimed_once_with_leases, |store| {
    use rtc_protocol::LoopStatus;
    use rtc_store::TickOutcome;
    store.create_workspace("ws_l", "l", "key-l").await?;
    bare_session(&store, "ws_l", "sess_l").await?;
    let mut ids = Vec::new();
    for i in 0..20 {
        let l = due_loop(&format!("loop_{i}"), "sess_l", 100);
        store.insert_loop(&l).await?;
        ids.push(l.id);
    }
    // Two instances race for the same due ticks: each tick goes to one.
    let (a, b) = tokio::join!(
        store.claim_due_ticks("inst_a", 150, 5_000, 100),
        store.claim_due_ticks("inst_b", 150, 5_000, 100)
    );
    let (a, b) = (a?, b?);
    assert_eq!(
        a.len() + b.len(),
        20,
        "every due tick claimed once: {} + {}",
        a.len(),
        b.len()
    );
    assert!(
        store
            .claim_due_ticks("inst_b", 200, 5_000, 100)
            .await?
            .is_empty(),
        "leased"
    );
    let holder = |id: &str| {
        if a.iter().any(|t| t.loop_id == id) {
            "inst_a"
        } else {
            "inst_b"
        }
    };
    let first = a.first().or(b.first()).unwrap().clone();
    assert!(
        !store
            .heartbeat_tick(&first.loop_id, "inst_x", 9_000)
            .await?,
        "only the holder heartbeats"
    );
    let ran = TickOutcome {
        ran: true,
        next_tick_at: 1_100,
        status: None,
    };
    store
        .finish_tick(&first, holder(&first.loop_id), &ran, 300)
        .await?;
    let l = store.loop_by_id(&first.loop_id).await?.unwrap();
    assert_eq!((l.turns_done, l.next_tick_at), (1, 1_100));
    assert!(
        store
            .claim_due_ticks("inst_a", 1_000, 5_000, 100)
            .await?
            .is_empty(),
        "not due yet"
    );
    let next = store.claim_due_ticks("inst_b", 1_100, 5_000, 100).await?;
    assert_eq!((next.len(), next[0].seq), (1, 2));
    // inst_b dies holding it: after the lease, inst_a takes the next tick.
    assert!(
        store
            .claim_due_ticks("inst_a", 6_200, 5_000, 100)
            .await?
            .iter()
            .any(|t| t.loop_id == first.loop_id && t.seq == 3)
    );
    let ticks = store.loop_ticks(&first.loop_id).await?;
    assert_eq!(
        ticks
            .iter()
            .map(|t| t.instance.as_str())
            .collect::<Vec<_>>()[1..],
        ["inst_b", "inst_a"]
    );
    assert_eq!(
        (ticks[0].outcome.as_deref(), ticks[1].finished_at),
        (Some("ran"), None)
    );
    // A final status set meanwhile (completeLoop) survives the tick's end.
    assert!(
        store
            .set_loop_status(
                &first.loop_id,
                &[LoopStatus::Active],
                LoopStatus::Completed,
                Some("done"),
                None,
                6_300
            )
            .await?
    );
    let exhaust = TickOutcome {
        ran: true,
        next_tick_at: 7_000,
        status: Some((LoopStatus::Exhausted, "max".into())),
    };
    let held = ClaimedTickView {
        loop_id: first.loop_id.clone(),
        seq: 3,
    };
    store
        .finish_tick(&held.tick(&first), "inst_a", &exhaust, 6_400)
        .await?;
    let l = store.loop_by_id(&first.loop_id).await?.unwrap();
    assert_eq!(
        (l.status, l.reason.as_deref(), l.turns_done),
        (LoopStatus::Completed, Some("done"), 2)
    );
    assert!(
        !store
            .set_loop_status(
                &first.loop_id,
                &[LoopStatus::Active, LoopStatus::Paused],
                LoopStatus::Paused,
                None,
                None,
                6_500
            )
            .await?
    );
    Ok(())
});

on_both!(
    ticks_are_claimed_in_due_order_and_finished_in_one_batch,
    |store| {
        use rtc_store::TickOutcome;
        store.create_workspace("ws_b", "b", "key-b").await?;
        bare_session(&store, "ws_b", "sess_b").await?;
        for i in 0..5_i64 {
            // Inserted newest-due first: the claim still gives the most
            // overdue first.
            store
                .insert_loop(&due_loop(&format!("loop_b{i}"), "sess_b", 500 - 100 * i))
                .await?;
        }
        let claimed = store.claim_due_ticks("inst_a", 450, 5_000, 3).await?;
        assert_eq!(
            claimed
                .iter()
                .map(|t| (t.loop_id.as_str(), t.due_at, t.seq))
                .collect::<Vec<_>>(),
            [
                ("loop_b4", 100, 1),
                ("loop_b3", 200, 1),
                ("loop_b2", 300, 1)
            ]
        );
        assert_eq!(store.loop_ticks("loop_b4").await?.len(), 1);
        let ran = TickOutcome {
            ran: true,
            next_tick_at: 1_450,
            status: None,
        };
        let skipped = TickOutcome {
            ran: false,
            next_tick_at: 1_450,
            status: None,
        };
        // The third was never this instance's: its lease is not released.
        let mut foreign = claimed[2].clone();
        foreign.loop_id = "loop_b0".into();
        let finished = store
            .finish_ticks(
                &[
                    (&claimed[0], &ran),
                    (&claimed[1], &skipped),
                    (&foreign, &ran),
                ],
                "inst_a",
                460,
            )
            .await?;
        assert_eq!(finished.len(), 3);
        let (a, b) = (finished[0].as_ref().unwrap(), finished[1].as_ref().unwrap());
        assert_eq!(
            (a.id.as_str(), a.turns_done, a.next_tick_at),
            ("loop_b4", 1, 1_450)
        );
        assert_eq!((b.id.as_str(), b.skipped_ticks), ("loop_b3", 1));
        assert!(finished[2].is_none(), "loop_b0 was not claimed");
        let ticks = store.loop_ticks("loop_b3").await?;
        assert_eq!(
            (ticks[0].outcome.as_deref(), ticks[0].finished_at),
            (Some("skipped"), Some(460))
        );
        // The finished loops are due again later; loop_b2 is still leased.
        let again = store.claim_due_ticks("inst_b", 460, 5_000, 10).await?;
        assert_eq!(
            again.iter().map(|t| t.loop_id.as_str()).collect::<Vec<_>>(),
            ["loop_b1"]
        );
        Ok(())
    }
);

/// An active loop of `session`, ticking every second, first due at `next_tick_at`.
fn due_loop(id: &str, session: &str, next_tick_at: i64) -> rtc_store::LoopRecord {
    rtc_store::LoopRecord {
        id: id.into(),
        session_id: session.into(),
        prompt: "check".into(),
        interval_ms: 1_000,
        max_turns: 10,
        turns_done: 0,
        skipped_ticks: 0,
        status: rtc_protocol::LoopStatus::Active,
        reason: None,
        expires_at: 1_000_000,
        next_tick_at,
        created_at: 1,
        updated_at: 1,
    }
}

struct ClaimedTickView {
    loop_id: String,
    seq: i64,
}

impl ClaimedTickView {
    fn tick(&self, like: &rtc_store::ClaimedTick) -> rtc_store::ClaimedTick {
        rtc_store::ClaimedTick {
            loop_id: self.loop_id.clone(),
            seq: self.seq,
            ..like.clone()
        }
    }
}

on_both!(sub_agents_and_their_inboxes, |store| {
    use rtc_protocol::{MessageRole, SessionStatus};
    use rtc_store::{InboxItem, InboxKind, SubAgentRecord};
    store.create_workspace("ws_t", "t", "key-t").await?;
    bare_session(&store, "ws_t", "root").await?;
    let item = |id: &str, session: &str, kind: InboxKind, call: Option<&str>| InboxItem {
        id: id.into(),
        session_id: session.into(),
        kind,
        from_session_id: Some("root".into()),
        call_id: call.map(str::to_owned),
        content: format!("content of {id}"),
        message_id: format!("msg_{id}"),
        created_at: 1,
    };
    let agent = |id: &str, call: Option<&str>| SubAgentRecord {
        session_id: id.into(),
        parent_id: "root".into(),
        root_id: "root".into(),
        mode: if call.is_some() { "sync" } else { "async" }.into(),
        call_id: call.map(str::to_owned),
        depth: 1,
        running: true,
        created_at: 2,
        updated_at: 2,
    };
    let (no_vars, no_config) = (serde_json::Map::new(), "{}");
    let child = |id: &'static str| rtc_store::NewSession {
        id,
        workspace_id: "ws_t",
        assistant_id: "a",
        parent_id: Some("root"),
        root_id: "root",
        user_id: None,
        title: Some("Child task"),
        variables: &no_vars,
        config: no_config,
        client_token: "t",
        workflow_id: None,
        owner: None,
    };
    store
        .create_sub_agent(
            child("kid_a"),
            &agent("kid_a", None),
            &item("i1", "kid_a", InboxKind::ParentMessage, None),
        )
        .await?;
    store
        .create_sub_agent(
            child("kid_s"),
            &agent("kid_s", Some("call_9")),
            &item("i2", "kid_s", InboxKind::ParentMessage, None),
        )
        .await?;
    let tree = store.session_tree("root").await?;
    assert_eq!(tree.len(), 3);
    let node = |id: &str| tree.iter().find(|(s, _)| s.id == id).unwrap();
    assert!(node("root").1.is_none(), "the root has no sub-agent row");
    assert_eq!(node("kid_a").0.title.as_deref(), Some("Child task"));
    assert_eq!(
        node("kid_s").1.as_ref().unwrap().call_id.as_deref(),
        Some("call_9")
    );
    assert_eq!(store.working_children("root").await?, 2);
    assert_eq!(store.awaited_sub_agents("root").await?.len(), 1);
    let mut working = store.working_sub_agents().await?;
    working.sort();
    assert_eq!(working, ["kid_a", "kid_s"]);

    // An item is consumed exactly when its message is in the history.
    assert_eq!(store.pending_inbox("kid_a").await?.len(), 1);
    let mut pending_sessions = store.sessions_with_pending_inbox().await?;
    pending_sessions.sort();
    assert_eq!(pending_sessions, ["kid_a", "kid_s"]);
    store
        .append_message("kid_a", &message("msg_i1", MessageRole::User, "task"))
        .await?;
    assert!(store.pending_inbox("kid_a").await?.is_empty());

    // The sync child reports: idle, no call waits, the result waits in the
    // root's inbox (ahead of older notifications).
    store
        .post_inbox(&item("i3", "root", InboxKind::Report, None))
        .await?;
    store
        .finish_sub_agent_run(
            "kid_s",
            &item("i4", "root", InboxKind::CallResult, Some("call_9")),
        )
        .await?;
    let root_inbox: Vec<String> = store
        .pending_inbox("root")
        .await?
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(root_inbox, ["i4", "i3"]);
    assert!(store.awaited_sub_agents("root").await?.is_empty());
    assert_eq!(store.working_children("root").await?, 1);
    let kid = store.sub_agent("kid_s").await?.unwrap();
    assert_eq!(
        (kid.running, kid.mode.as_str(), kid.call_id),
        (false, "sync", None)
    );

    // Stopped and ended sub-agents no longer count as working.
    store.stop_sub_agent("kid_a").await?;
    store
        .set_session_status(
            "kid_a",
            SessionStatus::Ended,
            Some("stopped"),
            Some("parent"),
        )
        .await?;
    assert_eq!(store.working_children("root").await?, 0);
    store.set_sub_agent_running("kid_s").await?;
    assert_eq!(store.working_sub_agents().await?, ["kid_s"]);
    let mut pending_sessions = store.sessions_with_pending_inbox().await?;
    pending_sessions.sort();
    assert_eq!(
        pending_sessions,
        ["kid_s", "root"],
        "a stopped session gets nothing"
    );
    Ok(())
});

on_both!(
    backups_are_deterministic_and_restore_in_one_piece,
    |store| {
        store.create_workspace("ws_a", "A", "key-a").await?;
        store
            .insert("ws_a", Some("tool_a".into()), tool("a"))
            .await?;
        store
            .import_v3(
                "ws_a",
                &[(
                    rtc_store::LegacyKind::Tool,
                    json!({"id": "tool_sys", "type": "system", "name": "skip_turn"}),
                )],
            )
            .await?;
        assert_eq!(store.pending_legacy().await?, 1);
        let backup = store.backup().await?;
        let bytes = backup.to_bytes()?;
        assert_eq!(
            store.backup().await?.to_bytes()?,
            bytes,
            "same content, same bytes"
        );
        assert_eq!(backup.manifest.fingerprint, store.fingerprint().await?);
        assert_eq!(backup.manifest.row_counts["resources"], 1);
        assert_eq!(rtc_store::Backup::parse(&bytes)?, backup);

        // Any change moves the fingerprint; the restore brings the content back.
        store
            .insert("ws_a", Some("tool_b".into()), tool("b"))
            .await?;
        store.create_workspace("ws_b", "B", "key-b").await?;
        assert_ne!(store.fingerprint().await?, backup.manifest.fingerprint);
        let summary = store.restore(&backup, Unsigned::Refuse).await?;
        assert_eq!(summary.migration_head, backup.manifest.migration_head);
        assert_eq!(store.backup().await?.to_bytes()?, bytes);
        assert!(store.get::<Tool>("ws_a", "tool_b").await?.is_none());

        // A changed file does not verify.
        let text = String::from_utf8(bytes)?.replacen("key-a", "key-x", 1);
        let tampered = text.replacen(
            &rtc_store::hash_token("key-a"),
            &rtc_store::hash_token("key-x"),
            1,
        );
        assert!(matches!(
            rtc_store::Backup::parse(tampered.as_bytes()),
            Err(StoreError::BackupInvalid(_))
        ));
        // An edit with the checksum recomputed parses, but its signature
        // does not match: it is refused, and nothing changes.
        let mut edited = backup.clone();
        let workspaces = edited.content.tables.get_mut("workspaces").unwrap();
        let hash_at = workspaces
            .columns
            .iter()
            .position(|c| c == "api_key_hash")
            .unwrap();
        workspaces.rows[0][hash_at] = json!(rtc_store::hash_token("attacker-key"));
        let resealed = rtc_store::Backup::new(edited.content.clone())?;
        edited.manifest.checksum = resealed.manifest.checksum;
        let edited = rtc_store::Backup::parse(&edited.to_bytes()?)?;
        let refused = store.restore(&edited, Unsigned::Allow).await;
        assert!(
            matches!(&refused, Err(StoreError::BackupInvalid(m)) if m.contains("signature")),
            "{refused:?}"
        );
        assert!(store.workspace_by_key("attacker-key").await?.is_none());
        // A version 1 (unsigned) backup restores only when allowed.
        let mut old = rtc_store::Backup::new(backup.content.clone())?;
        old.version = rtc_store::UNSIGNED_BACKUP_VERSION;
        let old = rtc_store::Backup::parse(&old.to_bytes()?)?;
        assert!(matches!(
            store.restore(&old, Unsigned::Refuse).await,
            Err(StoreError::BackupInvalid(m)) if m.contains("--allow-unsigned")
        ));
        store.restore(&old, Unsigned::Allow).await?;
        // A version 2 file without its signature is not a backup.
        let mut stripped = backup.clone();
        stripped.manifest.signature = None;
        assert!(matches!(
            rtc_store::Backup::parse(&stripped.to_bytes()?),
            Err(StoreError::BackupInvalid(_))
        ));

        let mut wrong_head = backup.clone();
        wrong_head.content.migrations.pop();
        let wrong_head = store.sign_backup(rtc_store::Backup::new(wrong_head.content)?)?;
        assert!(matches!(
            store.restore(&wrong_head, Unsigned::Refuse).await,
            Err(StoreError::BackupIncompatible(_))
        ));
        Ok(())
    }
);

#[path = "all/tasks.rs"]
mod tasks;

#[path = "all/session_cap.rs"]
mod session_cap;

#[path = "all/instances.rs"]
mod instances;

#[path = "all/summaries.rs"]
mod summaries;

#[path = "all/usage.rs"]
mod usage;

#[path = "all/quotas.rs"]
mod quotas;

on_both!(
    conversation_tests_belong_to_their_target_and_keep_their_newest_runs,
    |store| {
        use rtc_protocol::{ConversationTest, TestRun, TestRunStatus};
        use rtc_store::TestTarget;
        store.create_workspace("ws_a", "A", "key-a").await?;
        store.create_workspace("ws_b", "B", "key-b").await?;
        let assistant: Assistant =
            serde_json::from_value(json!({"name": "a", "systemPrompt": "Help."}))?;
        store
            .insert("ws_a", Some("asst_1".into()), assistant.clone())
            .await?;
        let target = TestTarget {
            kind: ResourceKind::Assistant,
            id: "asst_1",
        };
        let other = TestTarget {
            kind: ResourceKind::Workflow,
            id: "asst_1",
        };
        let case: ConversationTest =
            serde_json::from_value(json!({"name": "ships", "turns": ["hi"]}))?;
        let saved = store.insert_test("ws_a", target, case.clone()).await?;
        let id = saved.id.clone().unwrap();
        assert!(id.starts_with("test_"));
        assert_eq!(
            store.tests("ws_a", target).await?,
            std::slice::from_ref(&saved)
        );
        assert!(
            store.tests("ws_a", other).await?.is_empty(),
            "kinds are apart"
        );
        assert!(
            store.test("ws_b", target, &id).await?.is_none(),
            "workspaces are apart"
        );
        let mut renamed = case.clone();
        renamed.name = "ships fast".into();
        let updated = store
            .update_test("ws_a", target, &id, renamed)
            .await?
            .unwrap();
        assert_eq!(updated.name, "ships fast");
        assert!(
            store
                .update_test("ws_b", target, &id, case.clone())
                .await?
                .is_none()
        );

        let run = |n: usize| TestRun {
            id: format!("run_{n:02}"),
            test_id: id.clone(),
            test_name: "ships".into(),
            assistant_id: Some("asst_1".into()),
            workflow_id: None,
            status: if n.is_multiple_of(2) {
                TestRunStatus::Passed
            } else {
                TestRunStatus::Failed
            },
            error: None,
            session_id: None,
            expectations: vec![],
            transcript: vec![],
            tool_calls: vec![],
            variables: Default::default(),
            end_reason: None,
            turns_sent: 1,
            started_at: String::new(),
            duration_ms: n as u64,
        };
        for n in 0..5 {
            store.insert_test_run("ws_a", &run(n), 3).await?;
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let runs = store.test_runs("ws_a", &id, 10).await?;
        let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            ["run_04", "run_03", "run_02"],
            "newest first, three kept"
        );
        assert_eq!(store.test_run("ws_a", &id, "run_03").await?, Some(run(3)));
        assert!(store.test_run("ws_b", &id, "run_03").await?.is_none());

        // Runs of tests: stored running, updated as tests finish, the
        // newest kept, apart per workspace and target.
        let suite = |n: usize| rtc_protocol::TestSuiteRun {
            id: format!("tsrun_{n:02}"),
            status: rtc_protocol::TestSuiteStatus::Running,
            total: 2,
            passed: 0,
            failed: 0,
            errors: 0,
            runs: vec![],
            started_at: String::new(),
            finished_at: None,
        };
        for n in 0..4 {
            store.insert_suite_run("ws_a", target, &suite(n), 3).await?;
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let listed: Vec<String> = store
            .suite_runs("ws_a", target, 10)
            .await?
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(listed, ["tsrun_03", "tsrun_02", "tsrun_01"]);
        let mut done = suite(3);
        done.runs = vec![run(1), run(2)];
        done.recount();
        done.status = rtc_protocol::TestSuiteStatus::Finished;
        store.update_suite_run("ws_a", &done).await?;
        store.beat_suite_run("ws_a", "tsrun_03").await?;
        let read = store.suite_run("ws_a", target, "tsrun_03").await?.unwrap();
        assert_eq!(read, done);
        assert_eq!((read.passed, read.failed), (1, 1));
        assert_eq!(
            store
                .suite_run("ws_a", target, "tsrun_02")
                .await?
                .unwrap()
                .status,
            rtc_protocol::TestSuiteStatus::Running,
            "a run with a fresh heartbeat is running"
        );
        assert!(store.suite_run("ws_b", target, "tsrun_03").await?.is_none());
        assert!(store.suite_run("ws_a", other, "tsrun_03").await?.is_none());

        // A second test goes with its assistant, runs included.
        let second = store
            .insert_test("ws_a", target, case.clone())
            .await?
            .id
            .unwrap();
        assert!(store.delete_test("ws_a", target, &second).await?);
        assert!(!store.delete_test("ws_a", target, &second).await?);
        assert!(store.delete::<Assistant>("ws_a", "asst_1").await?);
        assert!(store.tests("ws_a", target).await?.is_empty());
        assert!(store.test_runs("ws_a", &id, 10).await?.is_empty());
        assert!(store.suite_runs("ws_a", target, 10).await?.is_empty());
        Ok(())
    }
);
