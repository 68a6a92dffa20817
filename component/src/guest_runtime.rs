//! What a `no_std` guest must supply itself: the allocator, the panic handler, and the
//! two symbols `std` would otherwise bring (the canonical ABI's `cabi_realloc`, `memcmp`).

/// lol_alloc's free list: a real allocator that frees (breakers and permits come and go)
/// in about a kilobyte of code, a third of what talc takes, for a component whose size is
/// budgeted. The component is single-threaded.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
// SAFETY: a component instance runs on one thread (no `atomics` target feature).
static ALLOCATOR: lol_alloc::AssumeSingleThreaded<heap::Heap> =
    unsafe { lol_alloc::AssumeSingleThreaded::new(heap::Heap::new()) };

#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
mod heap {
    use core::alloc::{GlobalAlloc, Layout};
    use core::cell::Cell;

    /// The free list, given the rest of the first page before its first allocation. The
    /// free list takes its memory from `memory.grow` in whole 64 KiB pages, so without the
    /// seed every instance would grow to a second page at its first allocation although
    /// the stack and the data (`build.rs`) leave most of the first one free; and hosts that
    /// start an instance per request (the wasi:http guard) reset every page an instance has,
    /// after each request.
    pub struct Heap {
        seeded: Cell<bool>,
        free: lol_alloc::FreeListAllocator,
    }

    impl Heap {
        pub const fn new() -> Self {
            Heap {
                seeded: Cell::new(false),
                free: lol_alloc::FreeListAllocator::new(),
            }
        }

        /// Hands the free list the memory between the linker's `__heap_base` and the end of
        /// the memory as instantiated, which nothing else uses.
        ///
        /// # Safety
        /// Only before the first allocation (so that the memory has not grown).
        unsafe fn seed(&self) {
            unsafe extern "C" {
                static __heap_base: u8;
            }
            const ALIGN: usize = 8;
            let base = (&raw const __heap_base) as usize;
            let start = base.next_multiple_of(ALIGN);
            let end = core::arch::wasm32::memory_size(0) * 65536;
            if end > start {
                // SAFETY: [start, end) is free memory, aligned as the free list's nodes. The
                // free list (lol_alloc 0.4) adds a block to its list by `dealloc`, as it does
                // the pages it grows; a page it grows later starts at `end` and joins it.
                unsafe {
                    self.free.dealloc(
                        start as *mut u8,
                        Layout::from_size_align_unchecked(end - start, ALIGN),
                    );
                }
            }
        }
    }

    // SAFETY: every block comes from the free list, which has all the heap's memory.
    unsafe impl GlobalAlloc for Heap {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if !self.seeded.replace(true) {
                // SAFETY: the first allocation.
                unsafe { self.seed() };
            }
            // SAFETY: the caller's layout, passed on.
            unsafe { self.free.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` came from `alloc` with `layout`.
            unsafe { self.free.dealloc(ptr, layout) }
        }
    }
}

/// `panic = "abort"` and no code path that panics on input; should one ever be reached,
/// the instance traps rather than unwinding across the component boundary.
#[cfg(all(target_family = "wasm", not(test)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

/// The canonical ABI's allocator export. On `wasm32-wasip2` wit-bindgen leaves it to `std`,
/// which this component does not link, so it is defined here over the global allocator.
///
/// # Safety
/// Called by the component host only, with the canonical ABI's contract: `old_ptr` and
/// `old_len` describe an earlier allocation of this function (or `old_len` is 0), `align`
/// is a power of two, and `new_len` is not zero when `old_len` is not.
#[cfg(target_family = "wasm")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cabi_realloc(
    old_ptr: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    use core::alloc::Layout;
    let ptr = if old_len == 0 {
        if new_len == 0 {
            return align as *mut u8;
        }
        // SAFETY: the canonical ABI passes a power-of-two alignment and a size that fits.
        unsafe { alloc::alloc::alloc(Layout::from_size_align_unchecked(new_len, align)) }
    } else {
        // SAFETY: `old_ptr` was allocated here with this size and alignment.
        unsafe {
            alloc::alloc::realloc(
                old_ptr,
                Layout::from_size_align_unchecked(old_len, align),
                new_len,
            )
        }
    };
    if ptr.is_null() {
        // Out of memory: nothing sensible to return to the host.
        core::arch::wasm32::unreachable();
    }
    ptr
}

/// `memcmp`, which `opt-level = "z"` calls out of line and which no library provides to a
/// `no_std` guest on `wasm32-wasip2` (std would bring wasi-libc's).
///
/// # Safety
/// `a` and `b` must be valid for reads of `n` bytes.
#[cfg(target_family = "wasm")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    for i in 0..n {
        // SAFETY: the caller guarantees `n` readable bytes at both pointers.
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
    }
    0
}
