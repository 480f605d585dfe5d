//! The guests' allocator for small objects: free lists per size class over chunks taken from the
//! system allocator.
//!
//! A strategy's scan allocates a few dozen small things (strings of a context, a state blob's
//! text, a signal's reason) and frees them all before the next scan. The system allocator of
//! `wasm32-wasip2` (wasi-libc's dlmalloc) pays for coalescing and bins on each of those; here a
//! small block is popped from and pushed onto a list of blocks of its size. Blocks up to
//! [`LARGEST`] bytes are never given back to the system, so what an instance holds is what its
//! busiest scan needed; anything larger (a candle window, a guest's big buffers) goes to the
//! system allocator as before. Guests are single-threaded, which is what lets the lists go
//! without locks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr;

/// Block sizes step by this much; it is also the most alignment a small block gives.
const GRAIN: usize = 16;
const CLASSES: usize = 64;
/// The largest small block.
pub const LARGEST: usize = GRAIN * CLASSES;
/// Small blocks are carved from chunks this big.
const CHUNK: usize = 64 * 1024;

pub struct SmallObjects {
    lists: UnsafeCell<Lists>,
}

struct Lists {
    /// The first free block of each class; a free block's first word points at the next.
    free: [*mut u8; CLASSES],
    /// The part of the current chunk not carved yet.
    next: *mut u8,
    end: *mut u8,
}

// SAFETY: only installed on wasm32 without the atomics feature, where a guest has one thread.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
unsafe impl Sync for SmallObjects {}

impl SmallObjects {
    pub const fn new() -> Self {
        SmallObjects {
            lists: UnsafeCell::new(Lists {
                free: [ptr::null_mut(); CLASSES],
                next: ptr::null_mut(),
                end: ptr::null_mut(),
            }),
        }
    }

    #[allow(clippy::mut_from_ref)]
    fn lists(&self) -> &mut Lists {
        // SAFETY: one thread, and no call below re-enters the allocator while this is held.
        unsafe { &mut *self.lists.get() }
    }
}

impl Default for SmallObjects {
    fn default() -> Self {
        Self::new()
    }
}

/// The size class of a layout, or `None` for the system allocator.
fn class(layout: Layout) -> Option<usize> {
    (layout.align() <= GRAIN && layout.size() <= LARGEST)
        .then(|| layout.size().saturating_sub(1) / GRAIN)
}

impl Lists {
    unsafe fn take(&mut self, class: usize) -> *mut u8 {
        let head = self.free[class];
        if !head.is_null() {
            // SAFETY: a free block holds the next free block's address in its first word.
            self.free[class] = unsafe { head.cast::<*mut u8>().read() };
            return head;
        }
        let size = (class + 1) * GRAIN;
        if (self.end as usize) - (self.next as usize) < size {
            // What is left of the old chunk (less than one block of this size) stays unused.
            // SAFETY: a valid, non-zero layout.
            let chunk = unsafe { System.alloc(Layout::from_size_align_unchecked(CHUNK, GRAIN)) };
            if chunk.is_null() {
                return chunk;
            }
            self.next = chunk;
            // SAFETY: the end of the chunk just allocated.
            self.end = unsafe { chunk.add(CHUNK) };
        }
        let block = self.next;
        // SAFETY: at least `size` bytes are left in the chunk.
        self.next = unsafe { block.add(size) };
        block
    }

    unsafe fn give(&mut self, class: usize, block: *mut u8) {
        // SAFETY: the block is at least GRAIN bytes, aligned to GRAIN, and no longer in use.
        unsafe { block.cast::<*mut u8>().write(self.free[class]) };
        self.free[class] = block;
    }
}

unsafe impl GlobalAlloc for SmallObjects {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match class(layout) {
            // SAFETY: the class of this layout.
            Some(class) => unsafe { self.lists().take(class) },
            // SAFETY: the caller's contract is the system allocator's.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match class(layout) {
            Some(_) => {
                // SAFETY: as `alloc`; the block is zeroed before it is handed out.
                let block = unsafe { self.alloc(layout) };
                if !block.is_null() {
                    unsafe { block.write_bytes(0, layout.size()) };
                }
                block
            }
            // SAFETY: as `alloc`; the system may have zeroed pages already.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        match class(layout) {
            // SAFETY: the block was taken for this layout's class.
            Some(class) => unsafe { self.lists().give(class, block) },
            // SAFETY: the block came from the system allocator with this layout.
            None => unsafe { System.dealloc(block, layout) },
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees a valid layout of `new_size` at the same alignment.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (class(layout), class(new_layout)) {
            (Some(old), Some(new)) if old == new => block,
            // SAFETY: both sizes are the system allocator's.
            (None, None) => unsafe { System.realloc(block, layout, new_size) },
            _ => {
                // SAFETY: a new block, the old contents copied over, the old block freed.
                unsafe {
                    let moved = self.alloc(new_layout);
                    if !moved.is_null() {
                        ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                        self.dealloc(block, layout);
                    }
                    moved
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_fall_into_classes_and_large_or_aligned_ones_go_to_the_system() {
        let layout = |size, align| Layout::from_size_align(size, align).unwrap();
        assert_eq!(class(layout(1, 1)), Some(0));
        assert_eq!(class(layout(16, 8)), Some(0));
        assert_eq!(class(layout(17, 8)), Some(1));
        assert_eq!(class(layout(LARGEST, 16)), Some(CLASSES - 1));
        assert_eq!(class(layout(LARGEST + 1, 1)), None);
        assert_eq!(class(layout(8, 32)), None);
    }

    /// Blocks in use never overlap, keep their contents through reallocation across classes
    /// and to and from the system, and freed blocks are reused.
    #[test]
    fn blocks_keep_their_contents_and_freed_ones_are_reused() {
        let heap = SmallObjects::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        let fill = |block: *mut u8, size: usize, byte: u8| unsafe { block.write_bytes(byte, size) };
        let intact = |block: *mut u8, size: usize, byte: u8| {
            (0..size).all(|i| unsafe { block.add(i).read() } == byte)
        };
        for round in 0..20_000u32 {
            let byte = round as u8;
            match next(4) {
                0 | 1 => {
                    let size = 1 + next(2 * LARGEST as u64) as usize;
                    let layout = Layout::from_size_align(size, 1 << next(5)).unwrap();
                    let block = unsafe { heap.alloc(layout) };
                    assert!(!block.is_null());
                    assert_eq!(block as usize % layout.align(), 0);
                    fill(block, size, byte);
                    live.push((block, layout, byte));
                }
                2 if !live.is_empty() => {
                    let (block, layout, old) = live.swap_remove(next(live.len() as u64) as usize);
                    assert!(intact(block, layout.size(), old));
                    unsafe { heap.dealloc(block, layout) };
                }
                _ if !live.is_empty() => {
                    let i = next(live.len() as u64) as usize;
                    let (block, layout, old) = live[i];
                    let size = 1 + next(2 * LARGEST as u64) as usize;
                    let moved = unsafe { heap.realloc(block, layout, size) };
                    assert!(intact(moved, layout.size().min(size), old));
                    let layout = Layout::from_size_align(size, layout.align()).unwrap();
                    fill(moved, size, byte);
                    live[i] = (moved, layout, byte);
                }
                _ => {}
            }
        }
        for (block, layout, byte) in live {
            assert!(intact(block, layout.size(), byte));
            unsafe { heap.dealloc(block, layout) };
        }
        // A freed block of a class is the next one handed out for it.
        let layout = Layout::from_size_align(40, 8).unwrap();
        let first = unsafe { heap.alloc(layout) };
        unsafe { heap.dealloc(first, layout) };
        assert_eq!(unsafe { heap.alloc(layout) }, first);
    }
}
