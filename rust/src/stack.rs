//! How much of the current thread's stack is left: the bound on every native recursion.
//!
//! The native decoder, encoder and schema compilers recurse once per nesting level of a value or
//! schema. A count (`serdes.max.depth`) bounds the levels, but not the bytes: the thread may be a
//! PyFlink thread-mode JVM thread (1 MiB stack), a `threading` thread with a 128 KiB
//! `threading.stack_size()`, or the 8 MiB main thread, and a debug build's frames are several times
//! larger than a release build's. So each recursion checks, before it goes one level deeper, that
//! the thread's stack still has [`RESERVE`] bytes below the current frame, in the style of the
//! `stacker` crate's `remaining_stack()`: the thread's stack bounds are read once per thread
//! (`pthread_getattr_np`, cached in a thread-local), and the check per level is one comparison of
//! the stack pointer with a precomputed limit.
//!
//! When the check fails the caller stops descending and takes its documented way out (the pure
//! decoder or encoder, which recurse on Python's stack, or a typed error); it never touches the
//! last [`RESERVE`] bytes, which stay for the Python code it may call at the deepest level (a
//! logical-type reader, a prepare function), for the error path, and for guard zones a runtime
//! keeps inside the stack it reports (the JVM's yellow/red pages, an old glibc's guard page).
use std::cell::Cell;

/// Bytes of stack kept free below the deepest native frame (see the module doc). It must also
/// hold the frames of one level (between two checks) and what they call: about 1.3 KiB in a
/// release build, but over 50 KiB in a debug build, whose frames are unoptimised.
pub const RESERVE: usize = if cfg!(debug_assertions) { 256 * 1024 } else { 32 * 1024 };

/// Bytes a native call may use when the thread's stack bounds cannot be read, or the stack
/// pointer is outside them (a coroutine running on a stack of its own): a conservative budget.
const UNKNOWN_BUDGET: usize = 64 * 1024;

thread_local! {
    /// (lowest address, highest address) of this thread's stack; (0, 0) until read, (1, 1) when
    /// it cannot be read
    static BOUNDS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// The current stack pointer (an address inside the current frame).
#[inline(always)]
pub fn sp() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn read_bounds() -> Option<(usize, usize)> {
    // SAFETY: `attr` is initialised by pthread_getattr_np before it is read and destroyed once;
    // pthread_attr_getstack writes the two out-parameters only. Both calls are on the current
    // thread, which is alive for the whole call.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        #[cfg(target_os = "freebsd")]
        let rc = {
            libc::pthread_attr_init(&mut attr);
            libc::pthread_attr_get_np(libc::pthread_self(), &mut attr)
        };
        #[cfg(not(target_os = "freebsd"))]
        let rc = libc::pthread_getattr_np(libc::pthread_self(), &mut attr);
        if rc != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        if rc != 0 || addr.is_null() || size == 0 {
            return None;
        }
        let low = addr as usize;
        Some((low, low.checked_add(size)?))
    }
}

#[cfg(target_os = "macos")]
fn read_bounds() -> Option<(usize, usize)> {
    // SAFETY: both functions only read the descriptor of the current, live thread
    unsafe {
        let t = libc::pthread_self();
        let high = libc::pthread_get_stackaddr_np(t) as usize;
        let size = libc::pthread_get_stacksize_np(t);
        Some((high.checked_sub(size)?, high))
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd", target_os = "macos")))]
fn read_bounds() -> Option<(usize, usize)> {
    None
}

fn bounds() -> (usize, usize) {
    BOUNDS.with(|b| {
        let mut v = b.get();
        if v == (0, 0) {
            v = read_bounds().unwrap_or((1, 1));
            b.set(v);
        }
        v
    })
}

/// The stack limit of one native call: a recursion may go one level deeper while [`Guard::ok`].
#[derive(Clone, Copy)]
pub struct Guard {
    limit: usize,
}

impl Guard {
    /// Read once per native call (a thread-local lookup), before the recursion starts.
    pub fn here() -> Guard {
        let here = sp();
        let (low, high) = bounds();
        let limit =
            if low < here && here <= high { low.saturating_add(RESERVE) } else { here.saturating_sub(UNKNOWN_BUDGET) };
        Guard { limit }
    }

    /// Whether the current frame still has more than [`RESERVE`] bytes of stack below it.
    #[inline(always)]
    pub fn ok(&self) -> bool {
        sp() > self.limit
    }

    /// Bytes left above the reserve (0 when inside it).
    pub fn left(&self) -> usize {
        sp().saturating_sub(self.limit)
    }
}

/// `_stack_left()`: bytes of this thread's stack a native recursion could still use, above
/// [`RESERVE`] (measurements and tests; not public API).
#[pyo3::pyfunction]
#[pyo3(name = "_stack_left")]
fn stack_left() -> usize {
    Guard::here().left()
}

pub fn register(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
    use pyo3::types::PyModuleMethods;
    m.add_function(pyo3::wrap_pyfunction!(stack_left, m)?)?;
    m.add("STACK_RESERVE", RESERVE)
}
