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

on_both!(a_reasoner_transcript_is_saved_step_by_step, |store| {
    store.create_workspace("ws_t", "T", "key-t").await?;
    bare_session(&store, "ws_t", "sess_m").await?;
    store
        .insert_task(&task("task_m", "sess_m", "inst_a", 1_000))
        .await?;
    let rows = |r: &[(i64, &str)]| -> Vec<(i64, String)> {
        r.iter().map(|(s, b)| (*s, (*b).to_owned())).collect()
    };
    assert!(store.task_transcript("task_m").await?.is_empty());

    // A step appends its messages; the next appends its own and rewrites
    // one it changed.
    assert!(
        store
            .save_task_step(
                "task_m",
                "inst_a",
                &rows(&[(0, "\"m0\""), (1, "\"m1\""), (2, "\"m2\"")]),
                &[],
                1,
                Some("step 1"),
            )
            .await?
    );
    assert!(
        store
            .save_task_step(
                "task_m",
                "inst_a",
                &rows(&[(3, "\"m3\""), (4, "\"m4\"")]),
                &rows(&[(1, "\"dropped\"")]),
                2,
                Some("step 2"),
            )
            .await?
    );
    let expected = ["\"m0\"", "\"dropped\"", "\"m2\"", "\"m3\"", "\"m4\""];
    assert_eq!(store.task_transcript("task_m").await?, expected);
    let t = store.task_by_id("task_m").await?.unwrap();
    assert_eq!(
        (t.steps, t.detail.as_deref(), t.transcript.as_str()),
        (2, Some("step 2"), "[]"),
        "the legacy column is not written"
    );

    // Another instance's save writes nothing, its rows neither.
    assert!(
        !store
            .save_task_step(
                "task_m",
                "inst_b",
                &rows(&[(5, "\"m5\"")]),
                &rows(&[(0, "\"stolen\"")]),
                3,
                Some("step 3"),
            )
            .await?
    );
    assert_eq!(store.task_transcript("task_m").await?, expected);
    let t = store.task_by_id("task_m").await?.unwrap();
    assert_eq!((t.steps, t.detail.as_deref()), (2, Some("step 2")));

    // An ended task takes no more steps.
    let ending = TaskEnding {
        status: "completed",
        result: Some("done"),
        error: None,
        report: None,
        holder: Some("inst_a"),
    };
    assert!(store.finish_task("task_m", &ending).await?);
    assert!(
        !store
            .save_task_step("task_m", "inst_a", &rows(&[(5, "\"m5\"")]), &[], 3, None)
            .await?
    );
    assert_eq!(store.task_transcript("task_m").await?.len(), 5);

    // Backups carry the rows (restored after their task).
    let with_rows = store.backup().await?;
    assert_eq!(with_rows.manifest.row_counts["task_messages"], 5);
    store.restore(&with_rows, Unsigned::Refuse).await?;
    assert_eq!(store.task_transcript("task_m").await?, expected);
    Ok(())
});

/// Deleting a session deletes its tasks, and their transcript rows with
/// them (nothing in the store deletes them: the foreign keys do).
async fn transcript_rows_go_with_their_task(engine: Engine) -> anyhow::Result<()> {
    let Some(db) = TestDatabase::new(engine).await? else {
        return Ok(());
    };
    let store = Store::connect(&db.url, SecretBox::new(&MasterKey::generate())).await?;
    store.migrate().await?;
    store.create_workspace("ws_t", "T", "key-t").await?;
    bare_session(&store, "ws_t", "sess_c").await?;
    store
        .insert_task(&task("task_c", "sess_c", "inst_a", 1_000))
        .await?;
    let rows = [(0, "\"m0\"".to_owned()), (1, "\"m1\"".to_owned())];
    assert!(
        store
            .save_task_step("task_c", "inst_a", &rows, &[], 1, None)
            .await?
    );
    assert_eq!(store.task_transcript("task_c").await?.len(), 2);
    // The store deletes no session: delete it as an operator would, in
    // the database itself.
    let left: i64 = if engine == Engine::Sqlite {
        let path = db.url.trim_start_matches("sqlite://");
        let path = path.split('?').next().unwrap_or(path);
        let conn = rusqlite::Connection::open(path)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute("DELETE FROM sessions WHERE id = ?1", ["sess_c"])?;
        conn.query_row("SELECT COUNT(*) FROM task_messages", [], |r| r.get(0))?
    } else {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&db.url).await?;
        sqlx::query("DELETE FROM sessions WHERE id = $1")
            .bind("sess_c")
            .execute(&mut conn)
            .await?;
        sqlx::query_scalar("SELECT COUNT(*) FROM task_messages")
            .fetch_one(&mut conn)
            .await?
    };
    assert_eq!(left, 0);
    assert!(store.task_by_id("task_c").await?.is_none());
    assert!(store.task_transcript("task_c").await?.is_empty());
    store.close().await;
    Ok(())
}

#[tokio::test]
async fn transcript_rows_go_with_their_task_sqlite() -> anyhow::Result<()> {
    transcript_rows_go_with_their_task(Engine::Sqlite).await
}

#[tokio::test]
async fn transcript_rows_go_with_their_task_postgres() -> anyhow::Result<()> {
    transcript_rows_go_with_their_task(Engine::Postgres).await
}
