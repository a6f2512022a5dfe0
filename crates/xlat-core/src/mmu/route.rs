//! Routes: which structures an access of each role (data: loads and stores; instruction:
//! fetches) probes at each level of the miss path, flattened into probe lists, and which TLBs a
//! translation of each page size fills. Computed once from the configuration (which TLB holds
//! which page size never changes).

use super::range::RangeTlb;
use super::tlb::Tlb;
use crate::units::PageSize;

/// One probe of a page TLB at one page size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe {
    /// Route level (0 = first).
    pub(crate) level: u32,
    pub(crate) tlb: u32,
    pub(crate) shift: u32,
    pub(crate) size: u8,
    /// `size << VPN_BITS`: the size field of the key.
    pub(crate) size_bits: u64,
}

/// One structure of the miss path besides the page TLBs, at one route level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Side {
    /// Route level (0 = first: an L1 range TLB).
    pub(crate) level: u32,
    pub(crate) kind: SideKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SideKind {
    /// A range TLB (index into the MMU's range TLBs).
    Range(u32),
    /// One of the `extra` stages given to [`Routes::new`] (0: the clustered TLB, 1: the
    /// direct segment).
    Extra(u32),
}

/// The routes of both roles.
#[derive(Debug, Clone, Default)]
pub(crate) struct Routes {
    /// Per role: per level, the page TLBs probed (levels that serve the role only, in order).
    pub(crate) tlbs: [Vec<Vec<usize>>; 2],
    /// Per role: per level, the range TLBs probed (empty lists when there are none).
    pub(crate) ranges: [Vec<Vec<usize>>; 2],
    /// Per role: per level, the other miss-path structures probed (indices of the `extra`
    /// stages given to [`Routes::new`]: the clustered TLB, the direct segment).
    pub(crate) extras: [Vec<Vec<usize>>; 2],
    /// Per role and page size of a translation: the TLBs it fills, as (level, TLB, size held
    /// as), in route order.
    pub(crate) fills: [[Vec<(usize, usize, PageSize)>; 3]; 2],
    /// Level-1 probes per role, flattened over the TLBs and their page sizes.
    pub(crate) fast: [Vec<Probe>; 2],
    /// The probes of the levels below the first, flattened the same way, in route order.
    pub(crate) deep: [Vec<Probe>; 2],
    /// `ranges` and `extras` flattened in route order (per level: the range TLBs, then the
    /// extras), for the staged probe.
    pub(crate) sides: [Vec<Side>; 2],
}

impl Routes {
    /// The routes over `tlbs` and `ranges` (a range TLB's `stage` is its 1-based configured
    /// level; page TLBs have `level`, 0-based). `extra`: the stages of other structures of the
    /// miss path (0: absent), probed after the range TLBs of their level.
    pub(crate) fn new(tlbs: &[Tlb], ranges: &[(RangeTlb, u32)], extra: &[u32]) -> Routes {
        let page_levels = tlbs.iter().map(|t| t.level + 1).max().unwrap_or(0);
        let levels = ranges.iter().map(|r| r.1 as usize).max().unwrap_or(0).max(page_levels);
        let levels = extra.iter().map(|&s| s as usize).max().unwrap_or(0).max(levels);
        let mut routes = Routes::default();
        for r in 0..2 {
            for l in 0..levels {
                let v: Vec<usize> =
                    (0..tlbs.len()).filter(|&i| tlbs[i].level == l && tlbs[i].role.serves(r == 1)).collect();
                let w: Vec<usize> = (0..ranges.len()).filter(|&i| ranges[i].1 as usize == l + 1).collect();
                // A level no structure of the role sits at is skipped (the role's levels are
                // numbered in order of what it probes).
                let x: Vec<usize> = (0..extra.len()).filter(|&i| extra[i] as usize == l + 1).collect();
                if !v.is_empty() || !w.is_empty() || !x.is_empty() {
                    routes.tlbs[r].push(v);
                    routes.ranges[r].push(w);
                    routes.extras[r].push(x);
                }
            }
            routes.sides[r] = (0..routes.tlbs[r].len())
                .flat_map(|l| {
                    let ranges = routes.ranges[r][l].iter().map(|&i| SideKind::Range(i as u32));
                    let extras = routes.extras[r][l].iter().map(|&i| SideKind::Extra(i as u32));
                    ranges.chain(extras).map(move |kind| Side { level: l as u32, kind })
                })
                .collect();
            routes.fast[r] = probes(tlbs, &routes.tlbs[r], 0..1);
            routes.deep[r] = probes(tlbs, &routes.tlbs[r], 1..routes.tlbs[r].len());
            routes.fills[r] = std::array::from_fn(|s| {
                let mut v = Vec::new();
                for (l, ts) in routes.tlbs[r].iter().enumerate() {
                    for &t in ts {
                        if let Some(held) = tlbs[t].holds(PageSize::from_index(s)) {
                            v.push((l, t, held));
                        }
                    }
                }
                v
            });
        }
        routes
    }

    /// Levels of role `r`'s route.
    pub(crate) fn levels(&self, r: usize) -> usize {
        self.tlbs[r].len()
    }
}

/// The probes of route levels `levels`: every (TLB, page size held), in route order.
fn probes(tlbs: &[Tlb], route: &[Vec<usize>], levels: std::ops::Range<usize>) -> Vec<Probe> {
    let mut v = Vec::new();
    for l in levels {
        for &t in route.get(l).map_or(&[][..], Vec::as_slice) {
            for &s in &tlbs[t].sizes {
                v.push(Probe {
                    level: l as u32,
                    tlb: t as u32,
                    shift: s.shift(),
                    size: s as u8,
                    size_bits: (s as u64) << super::keys::VPN_BITS,
                });
            }
        }
    }
    v
}
