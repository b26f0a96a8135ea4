//! Instances, turn ownership and client tools across instances: a turn is
//! claimed by one instance at a time, a dead owner's work is adopted
//! once, and a client's reply reaches only the call of its own session.

use super::*;
use rtc_store::{ClientConnectionRow, OrphanedSession, TurnClaim};

on_both!(
    turns_are_claimed_once_and_a_dead_owners_work_adopted_once,
    |store| {
        store.create_workspace("ws_o", "O", "key-o").await?;
        bare_session(&store, "ws_o", "sess_1").await?;
        bare_session(&store, "ws_o", "sess_2").await?;
        let (now, lease) = (100_000, 10_000);
        store
            .heartbeat_instance("inst_a", Some("host"), 1, now)
            .await?;
        store
            .heartbeat_instance("inst_b", Some("host"), 2, now)
            .await?;
        let live = now - lease;

        // A claims; B finds it busy while A lives.
        assert_eq!(
            store.claim_turn("sess_1", "inst_a", live).await?,
            TurnClaim::Claimed { cut_off: false }
        );
        assert_eq!(
            store.claim_turn("sess_1", "inst_b", live).await?,
            TurnClaim::Busy {
                owner: "inst_a".into()
            }
        );
        assert_eq!(
            store.live_turn_owner("sess_1", live).await?.as_deref(),
            Some("inst_a")
        );
        // Claimed, not begun: a claim again closes nothing. Once the turn
        // began, A's own claim again (its turn ended uncleanly) is a cut-off
        // turn.
        assert_eq!(
            store.claim_turn("sess_1", "inst_a", live).await?,
            TurnClaim::Claimed { cut_off: false }
        );
        store.set_turn_running("sess_1", true).await?;
        assert_eq!(
            store.claim_turn("sess_1", "inst_a", live).await?,
            TurnClaim::Claimed { cut_off: true }
        );
        // A live owner's work is not orphaned.
        assert!(
            store
                .orphaned_sessions(None, live, "", 10)
                .await?
                .is_empty()
        );
        // ...unless at A's own restart.
        assert_eq!(
            store
                .orphaned_sessions(Some("inst_a"), live, "", 10)
                .await?,
            vec![OrphanedSession {
                id: "sess_1".into(),
                owner: Some("inst_a".into())
            }]
        );

        // A stops heartbeating: its turn is orphaned and adopted by one instance.
        let later = now + 2 * lease;
        store
            .heartbeat_instance("inst_b", Some("host"), 2, later)
            .await?;
        store
            .heartbeat_instance("inst_c", Some("host"), 3, later)
            .await?;
        let live = later - lease;
        assert_eq!(store.live_turn_owner("sess_1", live).await?, None);
        let orphans = store.orphaned_sessions(None, live, "", 10).await?;
        assert_eq!(orphans.len(), 1, "{orphans:?}");
        let (b, c) = tokio::join!(
            store.adopt_session("sess_1", Some("inst_a"), "inst_b"),
            store.adopt_session("sess_1", Some("inst_a"), "inst_c")
        );
        assert!(b? ^ c?, "exactly one adopts");
        assert_eq!(store.instances_on("host", "inst_b").await?.len(), 2);

        // Two instances claiming an idle session at once: one wins.
        let (b, c) = tokio::join!(
            store.claim_turn("sess_2", "inst_b", live),
            store.claim_turn("sess_2", "inst_c", live)
        );
        let wins = [b?, c?]
            .iter()
            .filter(|c| matches!(c, TurnClaim::Claimed { .. }))
            .count();
        assert_eq!(wins, 1);
        // A claim that started nothing is released by its owner only.
        let owner = store.turn_owner("sess_2").await?.unwrap();
        let other = if owner == "inst_b" {
            "inst_c"
        } else {
            "inst_b"
        };
        store.release_turn("sess_2", other).await?;
        assert!(store.session_by_id("sess_2").await?.unwrap().turn_running);
        store.release_turn("sess_2", &owner).await?;
        assert!(!store.session_by_id("sess_2").await?.unwrap().turn_running);
        // Paged past the last id: none.
        assert!(
            store
                .orphaned_sessions(None, live, "sess_9", 10)
                .await?
                .is_empty()
        );
        // An ended session is not claimed.
        store
            .set_session_status("sess_2", rtc_protocol::SessionStatus::Ended, None, None)
            .await?;
        assert_eq!(
            store.claim_turn("sess_2", "inst_b", live).await?,
            TurnClaim::Ended
        );
        store.remove_instance("inst_c").await?;
        assert_eq!(
            store.live_instances(0).await?,
            vec!["inst_a".to_owned(), "inst_b".to_owned()]
        );
        Ok(())
    }
);

on_both!(client_replies_reach_the_waiting_instance_once, |store| {
    store.create_workspace("ws_c", "C", "key-c").await?;
    bare_session(&store, "ws_c", "sess_c").await?;
    bare_session(&store, "ws_c", "sess_other").await?;
    let row = ClientConnectionRow {
        id: "conn_1".into(),
        session_id: "sess_c".into(),
        instance: "inst_a".into(),
        functions: [("blink".to_owned(), Some("abc".to_owned()))].into(),
        seen_at: 1_000,
        hosts_turns: false,
    };
    store.put_client_connection(&row).await?;
    assert_eq!(
        store.client_connections("sess_c", 500).await?,
        vec![row.clone()]
    );
    assert!(
        store.client_connections("sess_c", 2_000).await?.is_empty(),
        "stale rows are not offered"
    );
    // A voice host's row says the session's turns run where it is.
    let host = ClientConnectionRow {
        hosts_turns: true,
        ..row.clone()
    };
    store.put_client_connection(&host).await?;
    assert_eq!(store.client_connections("sess_c", 500).await?, vec![host]);
    store.put_client_connection(&row).await?;
    store.heartbeat_client_connections("inst_a", 3_000).await?;
    assert!(store.client_connection_open("conn_1", 2_000).await?);

    store
        .insert_client_call("call_1", "sess_c", "inst_b", "conn_1", 3_000)
        .await?;
    // Another session's host cannot answer it.
    assert_eq!(
        store
            .answer_client_call("call_1", "sess_other", &json!({"result": 1}))
            .await?,
        None
    );
    assert_eq!(
        store
            .answer_client_call("call_1", "sess_c", &json!({"result": 2}))
            .await?
            .as_deref(),
        Some("inst_b")
    );
    // Answered once.
    assert_eq!(
        store
            .answer_client_call("call_1", "sess_c", &json!({"result": 3}))
            .await?,
        None
    );
    assert_eq!(
        store.take_client_reply("sess_c", "call_1").await?,
        Some(json!({"result": 2}))
    );
    assert_eq!(store.take_client_reply("sess_c", "call_1").await?, None);
    // The same call id in another session is another call.
    store
        .insert_client_call("call_2", "sess_c", "inst_b", "conn_1", 3_000)
        .await?;
    store
        .insert_client_call("call_2", "sess_other", "inst_b", "conn_1", 3_000)
        .await?;
    assert_eq!(
        store.take_client_reply("sess_c", "call_2").await?,
        None,
        "no reply yet: kept"
    );
    store
        .answer_client_call("call_2", "sess_other", &json!({"result": 4}))
        .await?;
    assert_eq!(store.take_client_reply("sess_c", "call_2").await?, None);
    assert_eq!(
        store.take_client_reply("sess_other", "call_2").await?,
        Some(json!({"result": 4}))
    );
    store.remove_client_call("sess_c", "call_2").await?;
    assert_eq!(
        store
            .answer_client_call("call_2", "sess_c", &json!({"result": 5}))
            .await?,
        None
    );

    store.remove_client_connection("conn_1").await?;
    assert!(!store.client_connection_open("conn_1", 0).await?);
    store.put_client_connection(&row).await?;
    store.remove_stale_client_connections("inst_a", 0).await?;
    assert!(store.client_connections("sess_c", 0).await?.is_empty());
    Ok(())
});
