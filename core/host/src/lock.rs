//! The lock the thread-safe hosts put around a breaker (feature `std`): one atomic
//! read-modify-write to take it, a plain store to give it back.
//!
//! `std::sync::Mutex` and `parking_lot::Mutex` both spend a second atomic
//! read-modify-write on unlock (to learn whether anyone sleeps on the lock). On the native
//! breaker's hot path, a closed acquire and record of ~5 ns each, that second RMW is a
//! third of the cost; around a component call (~150 ns in wasmtime) the two full barriers
//! of a `Mutex` are a tenth of a pair. Nobody sleeps here: critical sections never block,
//! so waiters spin briefly and then yield their core, which also lets a holder that the
//! scheduler preempted (8 threads on 2 cores) finish its section. The price: a waiter
//! keeps yielding (burning its core's share) while the holder runs a long section (a
//! component's `import-state`, a breaker's creation), and the lock is not fair; both
//! hosts hold it for one breaker operation at a time.
//!
//! The only `unsafe` in this crate: the breaker itself is safe code.

use std::cell::UnsafeCell;
use std::hint::spin_loop;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};

/// Spins before each yield. Few: with more threads than cores, a waiter that yields soon
/// lets the holder (or a thread that will not need the lock's cache line moved) run; 4
/// measured best against 0, 1, 16 and 64 with 2 and 8 threads on 2 cores.
const SPINS: u32 = 4;

/// A value behind the lock; [`Lock::lock`] gives a [`Guard`].
pub struct Lock<T> {
    held: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a `Guard`, which exists only while its thread
// holds the lock, so at most one thread reaches the value at a time: what `Mutex<T>`
// offers, with the same bound. A shared `Guard` is `Sync` only when `T` is (its
// `PhantomData<&mut T>`), as a `MutexGuard` is.
unsafe impl<T: Send> Sync for Lock<T> {}

/// The value, borrowed while the lock is held; gives the lock back when dropped (also
/// when the holder unwinds). A guard rather than a closure, so the hot path inlines
/// whole: a closure's body is a function of its own, and what it returns goes through
/// memory.
///
/// A guard is shared between threads only when the value may be (`T: Sync`), or two
/// threads could reach a `Cell` through one guard:
///
/// ```compile_fail
/// fn shared<T: Sync>(_: &T) {}
/// let lock = tripgate_host::Lock::new(std::cell::Cell::new(0u64));
/// shared(&lock.lock()); // `Cell` is not `Sync`, so neither is its guard
/// ```
pub struct Guard<'a, T> {
    lock: &'a Lock<T>,
    /// Borrows the value as `&mut T` does, for the auto traits.
    value: PhantomData<&'a mut T>,
}

impl<T> Drop for Guard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        self.lock.held.store(false, Ordering::Release);
    }
}

impl<T> std::ops::Deref for Guard<'_, T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while this thread holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> std::ops::DerefMut for Guard<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only borrow.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Lock<T> {
    /// An unlocked lock around `value`.
    pub fn new(value: T) -> Self {
        Self {
            held: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock. The holder must not take it again before dropping the guard (it
    /// would spin forever); the hosts call listeners only after dropping it.
    #[inline(always)]
    pub fn lock(&self) -> Guard<'_, T> {
        // Acquire pairs with the previous holder's Release store in `Guard::drop`. A swap
        // (`xchg`), not a compare-exchange: setting a flag that is already set changes
        // nothing, and on x86 it needs no comparand register and fewer micro-ops (a
        // shared closed pair measured ~0.3 ns faster).
        if self.held.swap(true, Ordering::Acquire) {
            self.wait();
        }
        Guard {
            lock: self,
            value: PhantomData,
        }
    }

    /// Takes the lock when another thread holds it.
    #[cold]
    #[inline(never)]
    fn wait(&self) {
        let mut spins = 0u32;
        loop {
            // Read-only while it is held, so waiters do not steal the holder's cache line.
            while self.held.load(Ordering::Relaxed) {
                if spins < SPINS {
                    spins = spins.saturating_add(1);
                    spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if !self.held.swap(true, Ordering::Acquire) {
                return;
            }
        }
    }

    /// The value, for a caller that owns the lock outright.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::arithmetic_side_effects)]

    use super::Lock;
    use std::sync::Arc;
    use std::vec::Vec;

    /// Non-atomic increments under the lock from many threads add up exactly: the lock
    /// excludes (a lost update would show as a smaller total).
    #[test]
    fn increments_under_the_lock_are_never_lost() {
        const THREADS: u64 = 8;
        const ROUNDS: u64 = 20_000;
        let lock = Arc::new(Lock::new((0u64, 0u64)));
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let lock = Arc::clone(&lock);
                std::thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        let mut pair = lock.lock();
                        // Two writes that must stay equal if nobody else is inside.
                        pair.0 += 1;
                        std::hint::black_box(&pair.0);
                        pair.1 += 1;
                        assert_eq!(pair.0, pair.1);
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let mut lock = Arc::try_unwrap(lock).ok().unwrap();
        assert_eq!(*lock.get_mut(), (THREADS * ROUNDS, THREADS * ROUNDS));
    }
}
