//! Helpers for the simulator's own use of the host machine: prefetch hints and huge-page advice
//! for its large arrays. Nothing here changes a simulated result.

/// A host prefetch hint (x86-64 only; elsewhere nothing).
#[inline(always)]
pub fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A growable u32 array whose large allocations ask the host kernel for transparent huge
/// pages: the simulator's page-table entries are read at random, and 4KB host pages would make
/// every simulated walk a host TLB miss as well.
#[derive(Debug, Clone, Default)]
pub struct HostVec {
    v: Vec<u32>,
}

impl HostVec {
    pub fn grow(&mut self, n: usize) {
        if self.v.len() + n > self.v.capacity() {
            let cap = (self.v.capacity() * 2).max(1 << 20).max(self.v.len() + n);
            let mut nv: Vec<u32> = Vec::with_capacity(cap);
            advise_huge(nv.as_mut_ptr() as *mut u8, cap * 4);
            nv.extend_from_slice(&self.v);
            self.v = nv;
        }
        self.v.resize(self.v.len() + n, 0);
    }
}

impl std::ops::Deref for HostVec {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.v
    }
}
impl std::ops::DerefMut for HostVec {
    fn deref_mut(&mut self) -> &mut [u32] {
        &mut self.v
    }
}

/// `madvise(MADV_HUGEPAGE)` on the whole 2MB pages of a buffer (a hint; errors are ignored).
pub fn advise_huge(p: *mut u8, len: usize) {
    let start = (p as usize + (2 << 20) - 1) & !((2 << 20) - 1);
    let end = (p as usize + len) & !((2 << 20) - 1);
    if end > start {
        // SAFETY: the range lies inside an allocation we own; madvise only changes how the
        // kernel backs it.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}
