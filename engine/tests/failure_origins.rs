//! Where the engine learned of a failure: one count per failed rank, for the first source;
//! a failure source's wake flag makes the next progress call poll it, and that call counts
//! the failures it learned as events.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weft_engine::{Common, Diagnostics, Engine, EngineConfig, Setup};

/// An engine (rank 0 of 4) with one failure source fed through `queue`, and a slow path far
/// in the future so only `slow_path` or the wake flag polls it.
fn engine_with_source(queue: Arc<Mutex<Vec<u32>>>) -> Engine {
    let cfg = EngineConfig { slow_period: Duration::from_secs(3600), ..EngineConfig::default() };
    let mut e = Engine::new(0, 4, cfg);
    Setup::of(&mut e)
        .add_failure_source(Box::new(move |out: &mut Vec<u32>| out.append(&mut queue.lock().unwrap())));
    e
}

#[test]
fn runtime_notices_are_counted_once_per_rank() {
    let q = Arc::new(Mutex::new(vec![2, 3]));
    let mut e = engine_with_source(q.clone());
    assert_eq!(Setup::of(&mut e).slow_path(), 2, "two ranks newly failed");
    assert_eq!(Diagnostics::of(&e).stats().learned.runtime, 2);
    // The same ranks again, and self: nothing new.
    q.lock().unwrap().extend([2, 3, 0]);
    assert_eq!(Setup::of(&mut e).slow_path(), 0);
    assert_eq!(Diagnostics::of(&e).stats().learned.runtime, 2);
    assert_eq!(Diagnostics::of(&e).stats().learned.upper, 0);
    let mut failed = e.failures().world_ranks().to_vec();
    failed.sort_unstable();
    assert_eq!(failed, [2, 3]);
}

#[test]
fn wake_flag_polls_the_source_at_the_next_progress_call() {
    static FLAG: AtomicBool = AtomicBool::new(false);
    let q = Arc::new(Mutex::new(vec![1]));
    let mut e = engine_with_source(q);
    Setup::of(&mut e).wake_on(&FLAG);
    for _ in 0..200 {
        assert_eq!(e.progress(), 0, "nothing happened");
    }
    assert!(e.failures().world_ranks().is_empty(), "polled without the flag before the period");
    FLAG.store(true, Ordering::Relaxed);
    // The failure counts as an event: a wait loop looks at its request before it yields.
    assert_eq!(e.progress(), 1);
    assert_eq!(e.failures().world_ranks(), [1]);
    assert_eq!(Diagnostics::of(&e).stats().learned.runtime, 1);
}
