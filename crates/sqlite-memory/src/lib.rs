//! SQLite's memory on the process's allocator. By default SQLite takes every allocation from the
//! C library's `malloc` and counts it under one process-wide mutex. A row handed from a
//! connection's thread to the async workers is allocated on one thread and freed on another,
//! which the C library's per-thread arenas pay for with more locking: under concurrent reads
//! that was a sixth of the process's CPU. Here SQLite allocates through mimalloc (the server's
//! allocator) and keeps no memory statistics (nothing reads them).
//!
//! SQLite accepts this only before its first connection: the store calls [`configure`] before it
//! opens one, and later calls change nothing.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use libmimalloc_sys as mi;
use libsqlite3_sys as ffi;

unsafe extern "C" fn allocate(size: c_int) -> *mut c_void {
    // SAFETY: mimalloc's malloc takes any size; SQLite never asks for a negative one.
    unsafe { mi::mi_malloc(size.max(0) as usize) }
}

unsafe extern "C" fn release(block: *mut c_void) {
    // SAFETY: SQLite frees only what `allocate` or `reallocate` returned.
    unsafe { mi::mi_free(block) }
}

unsafe extern "C" fn reallocate(block: *mut c_void, size: c_int) -> *mut c_void {
    // SAFETY: as above; `block` is one of ours.
    unsafe { mi::mi_realloc(block, size.max(0) as usize) }
}

unsafe extern "C" fn size_of(block: *mut c_void) -> c_int {
    // SAFETY: `block` is one of ours (or null, whose size is 0).
    let size = unsafe { mi::mi_usable_size(block) };
    c_int::try_from(size).unwrap_or(c_int::MAX)
}

unsafe extern "C" fn round_up(size: c_int) -> c_int {
    // SAFETY: a pure function of its argument.
    let size = unsafe { mi::mi_good_size(size.max(0) as usize) };
    c_int::try_from(size).unwrap_or(c_int::MAX)
}

unsafe extern "C" fn start(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn stop(_: *mut c_void) {}

/// Puts SQLite on mimalloc without memory statistics, once per process; whether SQLite took it
/// (it refuses once a connection has been opened, and then keeps its defaults, which work too).
pub fn configure() -> bool {
    static CONFIGURED: OnceLock<bool> = OnceLock::new();
    *CONFIGURED.get_or_init(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(allocate),
            xFree: Some(release),
            xRealloc: Some(reallocate),
            xSize: Some(size_of),
            xRoundup: Some(round_up),
            xInit: Some(start),
            xShutdown: Some(stop),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: SQLite copies the methods before returning; both calls only set options and
        // fail harmlessly (SQLITE_MISUSE) once SQLite is initialized.
        let (memory, statistics) = unsafe {
            (
                ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &methods as *const _),
                ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int),
            )
        };
        if memory != ffi::SQLITE_OK || statistics != ffi::SQLITE_OK {
            tracing::warn!(
                memory,
                statistics,
                "SQLite was initialized before its allocator could be set; it keeps its own"
            );
        }
        memory == ffi::SQLITE_OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_allocates_from_mimalloc_once_configured() {
        assert!(configure(), "nothing opened SQLite before");
        assert!(configure(), "a second call answers the same");
        // SAFETY: a block SQLite allocates, inspected and given back to it.
        unsafe {
            let block = ffi::sqlite3_malloc(100);
            assert!(!block.is_null());
            assert!(mi::mi_is_in_heap_region(block));
            assert!(ffi::sqlite3_msize(block) >= 100);
            ffi::sqlite3_free(block);
        }
    }
}
