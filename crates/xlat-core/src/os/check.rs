//! The OS model's own invariants, for tests and fuzzing ([`super::Os::check`]): every frame in
//! use is a mapped page, a page-table (or companion) page or a range-table page; the buddy
//! allocator conserves frames; every address space's VMAs are non-empty, sorted and disjoint,
//! and every mapped page lies inside them.

use super::kernel::Kernel;
use super::types::Vma;

impl Kernel {
    pub(super) fn check(&self) -> Result<(), String> {
        let top = 1u64 << (12 + 9 * self.levels as u32);
        let mut mapped = 0u64;
        let mut tree_pages = 0u64;
        for sp in &self.spaces {
            let vmas: Vec<Vma> = sp.vmas().copied().collect();
            for (i, v) in vmas.iter().enumerate() {
                if v.start >= v.end {
                    return Err(format!("space {}: empty VMA [{:#x}, {:#x})", sp.asid, v.start, v.end));
                }
                if i > 0 && vmas[i - 1].end > v.start {
                    let p = vmas[i - 1];
                    return Err(format!(
                        "space {}: VMAs [{:#x}, {:#x}) and [{:#x}, {:#x}) overlap",
                        sp.asid, p.start, p.end, v.start, v.end
                    ));
                }
            }
            for (va, _, size) in self.pt.leaves(sp.root, self.levels, 0, top) {
                mapped += size.bytes() >> 12;
                let end = va + size.bytes();
                // Covered by adjacent VMAs (a huge page may straddle a split made by madvise:
                // the model does not split it there as Linux does).
                let mut at = va;
                for v in vmas.iter().skip_while(|v| v.end <= va) {
                    if v.start > at || at >= end {
                        break;
                    }
                    at = v.end;
                }
                if at < end {
                    return Err(format!("space {}: page [{va:#x}, {end:#x}) is mapped outside every VMA", sp.asid));
                }
            }
            tree_pages += sp.ranges.tree.pages.len() as u64;
        }
        let s = &self.stats;
        let want = mapped + s.page_table_pages + s.companion_pages + tree_pages + self.unmapped_frames;
        if s.frames_in_use != want {
            return Err(format!(
                "os.frames_in_use {} != mapped frames {mapped} + page-table pages {} + companion pages {} + range-table pages {tree_pages} + unmapped frames {}",
                s.frames_in_use, s.page_table_pages, s.companion_pages, self.unmapped_frames
            ));
        }
        let f = self.phys.fragmentation();
        if f.total_frames != f.free_frames + s.frames_in_use + self.pinned_frames {
            return Err(format!(
                "buddy: {} frames != {} free + {} in use + {} pinned",
                f.total_frames, f.free_frames, s.frames_in_use, self.pinned_frames
            ));
        }
        Ok(())
    }
}
