//! The module's allocator: mimalloc, told to reserve less address space and to commit it as
//! used.
//!
//! Two of mimalloc's defaults are changed before its first allocation:
//! * it reserves 1 GiB of address space for its first arena, so importing the module would add
//!   1.1 GB to the process's virtual size -- harmless to RSS and cgroup limits, but it fails a
//!   process run under `ulimit -v` that had room for its own data: 64 MiB here, later arenas
//!   growing as mimalloc's own rule says;
//! * on Linux it commits each arena's memory as soon as it reserves it, which raised the peak
//!   resident memory of decoding 200,000 Avro frames into columns to 2.7x the Arrow buffers (1.5x
//!   on glibc's malloc): committed as used here (1.85x; the speed is the same).
use std::alloc::{GlobalAlloc, Layout};
use std::sync::Once;

use mimalloc::MiMalloc;

/// The option numbers, from the `mi_option_t` enum of the mimalloc.h compiled (build.rs): the
/// crate exposes options only in its `extended` API, without constants.
mod option {
    include!(concat!(env!("OUT_DIR"), "/mimalloc_options.rs"));
}
/// KiB, mimalloc's unit for this option.
const ARENA_RESERVE_KIB: std::os::raw::c_long = 64 * 1024;
/// 0: an arena's memory is committed as it is used, not when the arena is reserved
const ARENA_EAGER_COMMIT: std::os::raw::c_long = 0;

extern "C" {
    fn mi_option_set(option: i32, value: std::os::raw::c_long);
}

static CONFIGURED: Once = Once::new();

#[inline(always)]
fn configure() {
    // (`Once` does not allocate; after the first call this is one atomic load)
    CONFIGURED.call_once(|| {
        // SAFETY: mimalloc's option setter, called once, before this module's first allocation
        unsafe {
            mi_option_set(option::ARENA_RESERVE, ARENA_RESERVE_KIB);
            mi_option_set(option::ARENA_EAGER_COMMIT, ARENA_EAGER_COMMIT);
        }
    });
}

pub(crate) struct ModuleAllocator;

// SAFETY: every call forwards to MiMalloc's, which upholds GlobalAlloc's contract
unsafe impl GlobalAlloc for ModuleAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        configure();
        MiMalloc.alloc(layout)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        configure();
        MiMalloc.alloc_zeroed(layout)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        MiMalloc.dealloc(ptr, layout)
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        MiMalloc.realloc(ptr, layout, new_size)
    }
}

#[cfg(test)]
mod tests {
    extern "C" {
        fn mi_option_get(option: i32) -> std::os::raw::c_long;
    }

    #[test]
    fn the_options_are_set_before_the_first_allocation() {
        let v = vec![1u8; 4096]; // (the test harness allocated long before: configure() ran)
        assert_eq!(v.len(), 4096);
        // SAFETY: mimalloc's option getter
        unsafe {
            assert_eq!(mi_option_get(super::option::ARENA_RESERVE), super::ARENA_RESERVE_KIB);
            assert_eq!(mi_option_get(super::option::ARENA_EAGER_COMMIT), super::ARENA_EAGER_COMMIT);
        }
    }
}
