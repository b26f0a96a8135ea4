use super::*;

/// Recursion that needs ~25 MB of stack: it would overflow a runtime
/// worker's 2 MB (and abort the process), not a conversion thread.
fn recurse(depth: usize) -> usize {
    let frame = std::hint::black_box([depth as u8; 256]);
    if depth == 0 {
        return usize::from(frame[0]);
    }
    std::hint::black_box(recurse(depth - 1)) + usize::from(frame[1] & 1)
}

#[tokio::test]
async fn a_deep_recursion_fits_the_conversion_stack() {
    let converter = Converter::new(1, Duration::from_secs(30));
    let odd = converter.run(|| recurse(100_000)).await.unwrap();
    assert_eq!(odd, 50_000);
}

#[tokio::test]
async fn the_caller_gets_an_error_at_the_deadline() {
    let converter = Converter::new(1, Duration::from_millis(100));
    let started = Instant::now();
    let err = converter
        .run(|| std::thread::sleep(Duration::from_secs(2)))
        .await
        .unwrap_err();
    assert_eq!(err, RunError::Deadline(Duration::from_millis(100)));
    assert!(started.elapsed() < Duration::from_secs(1));
}

/// An abandoned job keeps its slot until it ends: with one slot, the next
/// job waits for it, within its own deadline.
#[tokio::test]
async fn jobs_beyond_the_slots_wait_within_their_deadline() {
    let converter = Converter::new(1, Duration::from_millis(200));
    let err = converter
        .run(|| std::thread::sleep(Duration::from_millis(800)))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Deadline(_)));
    assert_eq!(
        converter.run(|| 1).await,
        Err(RunError::Deadline(Duration::from_millis(200))),
        "the slot is still taken"
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(converter.run(|| 2).await, Ok(2), "free again");
}

#[tokio::test]
async fn a_panicking_job_is_an_error() {
    let converter = Converter::new(1, Duration::from_secs(5));
    let err = converter
        .run(|| -> u8 { panic!("converter bug") })
        .await
        .unwrap_err();
    assert_eq!(err, RunError::Panicked);
    assert_eq!(converter.run(|| 3).await, Ok(3));
}
