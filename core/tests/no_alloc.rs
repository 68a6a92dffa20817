//! The breaker never touches the heap: a counting global allocator watches this thread
//! while acquire, record and reject run in every state.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use tripgate_core::{Breaker, Config, Outcome, MAX_EXPORT_LEN, SECOND as S};

struct Counting;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call to `System` unchanged; only counts on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ARMED.with(Cell::get) {
            COUNT.with(|c| c.set(c.get() + 1));
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ARMED.with(Cell::get) {
            COUNT.with(|c| c.set(c.get() + 1));
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns how many heap allocations it made on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    COUNT.with(|c| c.set(0));
    ARMED.with(|a| a.set(true));
    f();
    ARMED.with(|a| a.set(false));
    COUNT.with(Cell::get)
}

#[test]
fn the_counter_sees_allocations() {
    // Guards against a counter that can never fail.
    assert!(allocations(|| drop(std::hint::black_box(vec![1u8; 64]))) >= 1);
}

#[test]
fn acquire_record_and_reject_never_allocate() {
    let config = Config {
        slow_call_duration: Some(S),
        half_open_max_probes: 2,
        max_in_flight: Some(1000),
        ..Config::default()
    };
    let mut b = Breaker::new(config, 0).unwrap();
    let count = allocations(|| {
        // Closed: admit and record every outcome class.
        for i in 0..1000u64 {
            let p = b.acquire(i).decision.unwrap();
            let outcome = [
                Outcome::Success,
                Outcome::Cancelled,
                Outcome::status(404).unwrap(),
            ][i as usize % 3];
            let _ = b.record(p, outcome, i + 10);
        }
        // Trip, then reject while open.
        for _ in 0..5 {
            let p = b.acquire(2000).decision.unwrap();
            let _ = b.record(p, Outcome::Timeout, 2000);
        }
        for i in 0..1000 {
            assert!(b.acquire(3000 + i).decision.is_err());
        }
        // Half-open: probes, then saturated probing rejections.
        let probes = [
            b.acquire(20 * S).decision.unwrap(),
            b.acquire(20 * S).decision.unwrap(),
        ];
        for _ in 0..1000 {
            assert!(b.acquire(20 * S).decision.is_err());
        }
        for p in probes {
            let _ = b.record(p, Outcome::Success, 20 * S);
        }
        // Reads and the state snapshot.
        let _ = (b.metrics(21 * S), b.state(21 * S));
        let mut buf = [0u8; MAX_EXPORT_LEN];
        let len = b.export(21 * S, &mut buf).unwrap();
        b.import(&buf[..len], 0, 21 * S).unwrap();
    });
    assert_eq!(count, 0, "the breaker allocated {count} times");
}
