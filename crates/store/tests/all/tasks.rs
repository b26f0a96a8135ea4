//! Tasks: leases, takeover by one instance, and an ending written once
//! with its report.

use super::*;
use rtc_store::{InboxItem, InboxKind, TaskEnding, TaskRecord};

fn task(id: &str, session: &str, owner: &str, until: i64) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        workspace_id: "ws_t".into(),
        session_id: session.into(),
        backend_id: "tb_1".into(),
        backend_type: "reasoner".into(),
        config: "{}".into(),
        title: "Research".into(),
        instruction: "find out".into(),
        status: "running".into(),
        result: None,
        error: None,
        detail: None,
        external_id: None,
        transcript: "[]".into(),
        steps: 0,
        lease_owner: Some(owner.into()),
        lease_until: Some(until),
        deadline_at: 99_000,
        created_at: 1,
        updated_at: 1,
        finished_at: None,
    }
}

on_both!(tasks_are_leased_taken_over_and_end_once, |store| {
    store.create_workspace("ws_t", "T", "key-t").await?;
    store.create_workspace("ws_u", "U", "key-u").await?;
    bare_session(&store, "ws_t", "sess_t").await?;
    store
        .insert_task(&task("task_1", "sess_t", "inst_a", 1_000))
        .await?;
    store
        .insert_task(&task("task_2", "sess_t", "inst_a", 1_000))
        .await?;
    assert_eq!(store.running_backend_tasks("ws_t", "tb_1").await?, 2);
    let (tx_, ty_) = (
        task("task_x", "sess_t", "inst_a", 1_000),
        task("task_y", "sess_t", "inst_a", 1_000),
    );
    let (x, y) = tokio::join!(
        store.insert_task_within(&tx_, 3),
        store.insert_task_within(&ty_, 3)
    );
    assert!(
        x? ^ y?,
        "two tasks delegated at once cannot both pass a limit of 3 with 2 running"
    );
    for id in ["task_x", "task_y"] {
        let gone = TaskEnding {
            status: "failed",
            result: None,
            error: Some("e"),
            report: None,
            holder: None,
        };
        store.finish_task(id, &gone).await?;
    }
    assert!(
        store.task("ws_u", "sess_t", "task_1").await?.is_none(),
        "workspaces are isolated"
    );
    assert!(
        store.task("ws_t", "sess_other", "task_1").await?.is_none(),
        "sessions are isolated"
    );

    // Progress is saved only by the holder.
    assert!(
        store
            .save_task_progress("task_1", "inst_a", "[1]", 1, Some("step 1"))
            .await?
    );
    assert!(
        !store
            .save_task_progress("task_1", "inst_b", "[2]", 2, None)
            .await?
    );
    assert!(
        store
            .set_task_external_id("task_2", "inst_a", "ses_x")
            .await?
    );
    let t1 = store.task("ws_t", "sess_t", "task_1").await?.unwrap();
    assert_eq!(
        (t1.transcript.as_str(), t1.steps, t1.detail.as_deref()),
        ("[1]", 1, Some("step 1"))
    );

    // A live lease is not taken; an expired one by exactly one instance.
    assert!(
        store
            .claim_orphan_tasks("inst_b", 500, 9_000, 10, None)
            .await?
            .is_empty()
    );
    assert_eq!(
        store
            .renew_task_leases("inst_a", &["task_1".into(), "task_2".into()], 2_000)
            .await?,
        2
    );
    let (b, c) = tokio::join!(
        store.claim_orphan_tasks("inst_b", 2_500, 9_000, 10, None),
        store.claim_orphan_tasks("inst_c", 2_500, 9_000, 10, None)
    );
    let (b, c) = (b?, c?);
    assert_eq!(b.len() + c.len(), 2, "each task is taken once: {b:?} {c:?}");
    let b_ids: Vec<String> = b.iter().map(|t| t.id.clone()).collect();
    assert_eq!(
        store
            .tasks_lost_by("inst_a", &["task_1".into(), "task_2".into()])
            .await?
            .len(),
        2,
        "the old holder sees it lost both"
    );
    // A restart under the same name takes its own tasks back at once.
    if let Some(first) = b_ids.first() {
        let again = store
            .claim_orphan_tasks("inst_b", 0, 9_500, 10, Some(2))
            .await?;
        assert!(again.iter().any(|t| &t.id == first));
    }

    // The ending is written once, with its report.
    let report = InboxItem::new("sess_t", InboxKind::TaskReport, "task_1", None, "{}".into());
    let ending = TaskEnding {
        status: "completed",
        result: Some("42"),
        error: None,
        report: Some(&report),
        holder: Some("inst_a"),
    };
    assert!(
        !store.finish_task("task_1", &ending).await?,
        "a driver that lost the lease cannot end the task"
    );
    let ending = TaskEnding {
        holder: None,
        ..ending
    };
    assert!(store.finish_task("task_1", &ending).await?);
    let again = InboxItem::new("sess_t", InboxKind::TaskReport, "task_1", None, "{}".into());
    let twice = TaskEnding {
        report: Some(&again),
        ..ending.clone()
    };
    assert!(
        !store.finish_task("task_1", &twice).await?,
        "a task ends once"
    );
    let inbox = store.pending_inbox("sess_t").await?;
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0].kind, InboxKind::TaskReport);
    let t1 = store.task("ws_t", "sess_t", "task_1").await?.unwrap();
    assert_eq!(
        (t1.status.as_str(), t1.result.as_deref()),
        ("completed", Some("42"))
    );
    assert!(t1.finished_at.is_some() && t1.lease_owner.is_none());
    assert!(
        !store
            .save_task_progress("task_1", "inst_b", "[]", 3, None)
            .await?,
        "an ended task takes no progress"
    );
    let running: Vec<String> = store
        .running_session_tasks("sess_t")
        .await?
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(running, ["task_2"]);
    assert_eq!(
        store.session_tasks("ws_t", "sess_t").await?.len(),
        3,
        "task_1, task_2 and the one that passed the limit"
    );
    Ok(())
});
