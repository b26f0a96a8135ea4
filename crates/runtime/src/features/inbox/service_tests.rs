//! Delivery runs to its end when its caller stops waiting: a driver
//! dropped while it reports, or a request whose client went away, must
//! not leave an item delivered with no turn to answer it (or consumed
//! with nobody to deliver it).

use std::time::Duration;

use rtc_protocol::{CreateSessionParams, MessageRole};
use rtc_store::{InboxItem, InboxKind};
use rtc_testkit::{MockLlm, MockReply};

use super::InboxService;

const WS: &str = "ws_1";

async fn runtime(mock: &MockLlm) -> (crate::Runtime, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::test_support::sqlite_store(dir.path()).await;
    store.create_workspace(WS, "w", "key").await.unwrap();
    let rt = crate::Runtime::new(store, crate::test_support::config_at(&mock.base_url));
    rt.recover().await.unwrap();
    (rt, dir)
}

#[tokio::test]
async fn a_kick_whose_caller_stops_waiting_still_delivers_and_answers() {
    let mock = MockLlm::start(vec![MockReply::text("Noted.")])
        .await
        .unwrap();
    let (rt, _dir) = runtime(&mock).await;
    let assistant: rtc_protocol::Assistant =
        serde_json::from_value(serde_json::json!({"name": "Desk"})).unwrap();
    rt.inner
        .store
        .insert(WS, Some("desk".into()), assistant)
        .await
        .unwrap();
    let params = CreateSessionParams {
        assistant_id: Some("desk".into()),
        ..Default::default()
    };
    let sid = rt.create_session(WS, params).await.unwrap().id;
    let ctx = rt.inner.session(&sid).await.unwrap();
    let mut item = InboxItem::new(
        &sid,
        InboxKind::TaskReport,
        "task_1",
        None,
        "[Task report] \"Job\" (task_1) completed:\ndone".into(),
    );
    item.from_session_id = None;
    rt.inner.store.post_inbox(&item).await.unwrap();

    // The caller waits once, then goes away (its future is dropped).
    let mut kick = Box::pin(InboxService::of(&rt.inner).kick(&ctx));
    assert!(
        futures::poll!(&mut kick).is_pending(),
        "it is under way when its caller leaves"
    );
    drop(kick);

    let mut history = Vec::new();
    for _ in 0..250 {
        history = rt.inner.store.messages(&sid).await.unwrap();
        if history
            .last()
            .is_some_and(|m| m.role == MessageRole::Assistant)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let roles: Vec<(MessageRole, &str)> = history
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(
        roles,
        [
            (
                MessageRole::User,
                "[Task report] \"Job\" (task_1) completed:\ndone"
            ),
            (MessageRole::Assistant, "Noted.")
        ],
        "the report was delivered and answered"
    );
}
