use std::time::Duration;

use super::*;

fn gate(global: usize, per_workspace: usize, max_queued: u64) -> Arc<FairGate> {
    FairGate::new(TestQueueLimits {
        global,
        per_workspace,
        max_queued,
    })
}

/// Whether `ticket` gets its slot within a moment.
async fn runs_soon(ticket: Ticket) -> Option<Slot> {
    tokio::time::timeout(Duration::from_millis(50), ticket.wait())
        .await
        .ok()
}

/// One workspace with a dozen runs queued never keeps another's run
/// waiting: its own bound leaves slots free.
#[tokio::test]
async fn a_busy_workspace_leaves_room_for_another() {
    let g = gate(4, 2, 20);
    let mut a = g.admit("a", 12).unwrap();
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(runs_soon(a.remove(0)).await.expect("a's first two run"));
    }
    assert!(runs_soon(a.remove(0)).await.is_none(), "a is at its bound");
    assert_eq!(g.running("a"), 2);
    let b = g.admit("b", 1).unwrap().remove(0);
    let slot = runs_soon(b).await.expect("b runs at once");
    assert_eq!(g.running("b"), 1);
    drop(slot);
    drop(held);
}

/// Queued runs are served round-robin: when a slot frees, the workspace
/// that waited without being served goes before the one served last.
#[tokio::test]
async fn queued_runs_are_served_in_turn() {
    let g = gate(1, 1, 20);
    let first = g.admit("a", 1).unwrap().remove(0).wait().await;
    let a = g.admit("a", 3).unwrap();
    let b = g.admit("b", 3).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (name, tickets) in [("a", a), ("b", b)] {
        for t in tickets {
            let order = order.clone();
            tasks.push(tokio::spawn(async move {
                let slot = t.wait().await;
                order.lock().push(name);
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(slot);
            }));
            tokio::task::yield_now().await;
        }
    }
    drop(first);
    for t in tasks {
        t.await.unwrap();
    }
    let order = order.lock().clone();
    assert_eq!(order, ["a", "b", "a", "b", "a", "b"]);
}

/// Past `max_queued` admitted runs a workspace is refused at once, all or
/// none; finished runs make room again.
#[tokio::test]
async fn admission_is_bounded_per_workspace() {
    let g = gate(2, 1, 3);
    let two = g.admit("a", 2).unwrap();
    assert_eq!(
        g.admit("a", 2).err(),
        Some(Refused {
            admitted: 2,
            max: 3
        })
    );
    let one = g.admit("a", 1).unwrap();
    assert!(g.admit("a", 1).is_err());
    assert!(g.admit("b", 3).is_ok(), "another workspace has its own");
    drop(two);
    let slot = one.into_iter().next().unwrap().wait().await;
    assert_eq!(g.admit("a", 2).map(|t| t.len()), Ok(2));
    drop(slot);
}

/// A waiter that goes away gives its place back, and the next one runs.
#[tokio::test]
async fn a_waiter_that_goes_away_frees_its_place() {
    let g = gate(1, 1, 5);
    let running = g.admit("a", 1).unwrap().remove(0).wait().await;
    let mut queued = g.admit("a", 2).unwrap();
    let gone = queued.remove(0);
    assert!(runs_soon(gone).await.is_none());
    let next = queued.remove(0);
    let waiter = tokio::spawn(next.wait());
    tokio::task::yield_now().await;
    drop(running);
    let slot = tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("the next waiter runs")
        .unwrap();
    assert_eq!(g.running("a"), 1);
    drop(slot);
    assert_eq!(g.running("a"), 0);
    assert!(g.admit("a", 5).is_ok(), "every place was given back");
}

/// A suite is admitted with the room left (at least one place), and a
/// finished unit's slot hands its admission to the next unit: the slot
/// is free, the place is not.
#[tokio::test]
async fn a_suite_gets_the_room_left_and_reuses_its_places() {
    let g = gate(2, 2, 3);
    let held = g.admit("a", 2).unwrap();
    let suite = g.admit_up_to("a", 7).unwrap();
    assert_eq!(suite.len(), 1, "one place was left");
    assert!(g.admit_up_to("a", 1).is_err(), "no room at all: refused");
    drop(held);
    let mut ticket = suite.into_iter().next().unwrap();
    for _ in 0..3 {
        let slot = ticket.wait().await;
        assert_eq!(g.running("a"), 1);
        ticket = slot.into_ticket();
        assert_eq!(g.running("a"), 0, "the slot is free between units");
        assert_eq!(g.admit("a", 3).err().map(|r| r.admitted), Some(1));
    }
    drop(ticket);
    assert!(g.admit("a", 3).is_ok(), "every place was given back");
}
