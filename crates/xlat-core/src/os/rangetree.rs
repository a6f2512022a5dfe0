//! The range table's layout in simulated physical memory (RMM, seed 000 section 4.4.2, Figure
//! 4.4): a B-tree whose nodes hold up to 4 ranges and 5 child pointers, each node 2 cache lines
//! (128 bytes), so a 4KB page holds 32 nodes (128 ranges). A range-table walk visits the nodes
//! from the root down to the node holding the range that contains the address (or to a leaf
//! when none does); [`RangeTree::lookup_path`] gives their physical addresses.
//!
//! Layout: the tree is rebuilt from the sorted ranges whenever the table changed since the
//! last walk (it is read only by walks, so nothing is spent on it in between). The build is a
//! B-tree bulk load: the height is the smallest h with 5^h - 1 >= n ranges; a node of height
//! h > 1 holding n ranges gets the fewest ranges of its own that let its children (each a
//! subtree of height h - 1, at most 5^(h-1) - 1 ranges) hold the rest, c = ceil((n+1) /
//! 5^(h-1)) children and c - 1 ranges, the separators spaced so that the children's subtrees
//! differ by at most one range. Every leaf is at the same depth and every node but the root
//! holds at least 2 ranges: a valid B-tree of order 5, of the least height, and a function of the
//! sorted ranges alone (what the thesis leaves open: it gives the node's fan-out, not how the
//! OS balances the tree). Nodes are numbered breadth-first from the root (node 0) and node i
//! sits at byte (i mod 32) * 128 of the table's (i / 32)-th page, so the upper levels share the
//! first page.

use super::types::PAGE;

/// Ranges per node (seed 000 section 4.4.2: four range translations and five children).
pub const NODE_RANGES: usize = 4;
/// Bytes per node (seed 000 section 4.4.2: a node fits in two 64-byte cache lines).
pub const NODE_BYTES: u64 = 128;
/// Cache lines a walk loads per node visited: a range is 17 bytes (36-bit BASE and LIMIT, a
/// 64-bit OFFSET with protection bits), so the 4 ranges (68 bytes) already span both lines.
pub const NODE_LINES: u64 = 2;
/// Nodes per 4KB page (seed 000 section 4.4.2: one 4KB page stores 128 range translations).
pub const NODES_PER_PAGE: usize = (PAGE / NODE_BYTES) as usize;

#[derive(Debug, Clone, Copy, Default)]
struct Node {
    /// (base, limit) of its ranges, sorted; `n` of them valid.
    keys: [(u64, u64); NODE_RANGES],
    n: u8,
    /// Index of its first child (its children are consecutive, breadth-first); 0: a leaf.
    first_child: u32,
}

/// The B-tree of one address space's range table (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct RangeTree {
    nodes: Vec<Node>,
    /// Frames of the pages holding the nodes (node i in page i / 32).
    pub(super) pages: Vec<u64>,
    /// Whether the ranges changed since the last build.
    dirty: bool,
}

/// Ranges a subtree of height `h` holds at most (5^h - 1).
fn capacity(h: u32) -> usize {
    (NODE_RANGES + 1).pow(h) - 1
}

impl RangeTree {
    /// The ranges changed: rebuild before the next walk.
    #[inline]
    pub fn touch(&mut self) {
        self.dirty = true;
    }

    pub fn dirty(&self) -> bool {
        self.dirty
    }

    /// Rebuild the nodes from `ranges` ((base, limit), sorted by base, disjoint); returns the
    /// pages they need (the caller gives `pages` that many frames).
    pub fn build(&mut self, ranges: &[(u64, u64)]) -> usize {
        self.dirty = false;
        self.nodes.clear();
        let n = ranges.len();
        if n > 0 {
            let mut h = 1;
            while capacity(h) < n {
                h += 1;
            }
            // Breadth-first: every queued subtree becomes the next node, so a subtree's node
            // index is the nodes made so far plus its place in the queue.
            let mut queue = std::collections::VecDeque::from([(0usize, n, h)]);
            while let Some((lo, hi, h)) = queue.pop_front() {
                let mut node = Node::default();
                let n = hi - lo;
                if h == 1 {
                    debug_assert!((1..=NODE_RANGES).contains(&n));
                    node.keys[..n].copy_from_slice(&ranges[lo..hi]);
                    node.n = n as u8;
                } else {
                    let c = (n + 1).div_ceil(capacity(h - 1) + 1);
                    let (rest, k) = (n - (c - 1), c - 1);
                    node.first_child = (self.nodes.len() + 1 + queue.len()) as u32;
                    let mut at = lo;
                    for j in 0..c {
                        let m = rest / c + (j < rest % c) as usize;
                        debug_assert!(m >= 1 && m <= capacity(h - 1));
                        queue.push_back((at, at + m, h - 1));
                        at += m;
                        if j < k {
                            node.keys[j] = ranges[at];
                            at += 1;
                        }
                    }
                    debug_assert_eq!(at, hi);
                    node.n = k as u8;
                }
                self.nodes.push(node);
            }
        }
        self.nodes.len().div_ceil(NODES_PER_PAGE)
    }

    /// Nodes in the tree.
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Physical address of node `i`.
    #[inline]
    fn node_pa(&self, i: usize) -> u64 {
        (self.pages[i / NODES_PER_PAGE] << 12) + (i % NODES_PER_PAGE) as u64 * NODE_BYTES
    }

    /// The physical addresses of the nodes a lookup of `va` visits, root first, into `out`
    /// (cleared first; empty for an empty table): down to the node holding the range that
    /// contains `va` (returns true), or to a leaf (false). The tree must be built.
    pub fn lookup_path(&self, va: u64, out: &mut Vec<u64>) -> bool {
        debug_assert!(!self.dirty, "the tree is built before a walk");
        out.clear();
        if self.nodes.is_empty() {
            return false;
        }
        let mut i = 0;
        loop {
            out.push(self.node_pa(i));
            let node = &self.nodes[i];
            let mut child = node.n as usize;
            for (j, &(base, limit)) in node.keys[..node.n as usize].iter().enumerate() {
                if va < base {
                    child = j;
                    break;
                }
                if va < limit {
                    return true;
                }
            }
            if node.first_child == 0 {
                return false;
            }
            i = node.first_child as usize + child;
        }
    }

    /// The tree's height and whether it is a valid B-tree of the ranges it was built from:
    /// leaves at one depth, every node but the root at least half full (tests).
    #[cfg(test)]
    fn check(&self) -> u32 {
        fn walk(t: &RangeTree, i: usize, depth: u32, root: bool, leaves: &mut Vec<u32>) {
            let node = &t.nodes[i];
            assert!(node.n >= if root { 1 } else { 2 }, "node {i} holds {}", node.n);
            if node.first_child == 0 {
                leaves.push(depth);
            } else {
                for c in 0..=node.n as usize {
                    walk(t, node.first_child as usize + c, depth + 1, false, leaves);
                }
            }
        }
        let mut leaves = Vec::new();
        walk(self, 0, 1, true, &mut leaves);
        assert!(leaves.iter().all(|&d| d == leaves[0]), "leaves at one depth");
        leaves[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` ranges of 8 pages, one every 16 pages, in a tree on pages at frames 1000, 1001, ...
    fn tree(n: usize) -> (RangeTree, Vec<(u64, u64)>) {
        let ranges: Vec<(u64, u64)> =
            (0..n as u64).map(|i| (0x1000_0000 + i * 16 * PAGE, 0x1000_0000 + (i * 16 + 8) * PAGE)).collect();
        let mut t = RangeTree::default();
        let pages = t.build(&ranges);
        t.pages = (1000..1000 + pages as u64).collect();
        (t, ranges)
    }

    #[test]
    fn node_loads_per_lookup_are_the_depth_of_each_range() {
        // (ranges, nodes, height, average nodes visited per lookup of each range, as a
        // fraction): 4 ranges fit one node; 5 need a root with 1 range over two leaves of 2;
        // 24 fill two levels (root 4, 5 leaves of 4); 124 fill three (4 + 20 + 100).
        for (n, nodes, height, visits) in [
            (1, 1, 1, (1, 1)),
            (4, 1, 1, (4, 4)),
            (5, 3, 2, (1 + 4 * 2, 5)),
            (24, 6, 2, (4 + 20 * 2, 24)),
            (124, 31, 3, (4 + 20 * 2 + 100 * 3, 124)),
        ] {
            let (t, ranges) = tree(n);
            assert_eq!((t.nodes(), t.check()), (nodes, height), "{n} ranges");
            let mut path = Vec::new();
            let mut total = 0;
            let mut max = 0;
            for &(base, limit) in &ranges {
                for va in [base, limit - 1] {
                    assert!(t.lookup_path(va, &mut path), "{n}: {va:#x} found");
                }
                total += path.len();
                max = max.max(path.len());
                assert_eq!(path[0], 1000 << 12, "the root is node 0");
            }
            assert_eq!(max as u32, height, "{n} ranges: the deepest range is in a leaf");
            assert_eq!((total, n), visits, "{n} ranges: nodes visited over all ranges");
            // An address in no range goes down to a leaf.
            assert!(!t.lookup_path(ranges[0].1, &mut path));
            assert_eq!(path.len() as u32, height);
        }
        // 24 ranges: average 44/24 = 1.83 nodes (3.67 cache-line loads); 124: 344/124 = 2.77
        // nodes (5.55 loads); the worst case is the height: 2 and 3 nodes (4 and 6 loads).
    }

    #[test]
    fn nodes_are_breadth_first_32_to_a_page() {
        // 124 ranges: 31 nodes, one page; the root's children are nodes 1..5.
        let (t, ranges) = tree(124);
        let mut path = Vec::new();
        assert!(t.lookup_path(ranges[0].0, &mut path));
        assert_eq!(path, vec![1000 << 12, (1000 << 12) + 128, (1000 << 12) + 6 * 128]);
        // 125 ranges need height 4 (the root: ceil(126 / 125) = 2 children); 1000 ranges in
        // 4 levels take more than 32 nodes: a second page.
        let (t, _) = tree(125);
        assert_eq!((t.check(), t.nodes().div_ceil(NODES_PER_PAGE)), (4, 2));
        let (t, ranges) = tree(1000);
        assert_eq!(t.check(), 5);
        assert!(t.nodes() > 32 && t.pages.len() == t.nodes().div_ceil(32));
        let last = *ranges.last().unwrap();
        assert!(t.lookup_path(last.0 + 5, &mut path));
        assert!(path.iter().any(|&pa| pa >> 12 != 1000));
        // Every range of a big tree is found, and holes are not.
        for &(b, l) in &ranges {
            assert!(t.lookup_path(b + PAGE, &mut path) && !t.lookup_path(l, &mut path));
        }
    }

    #[test]
    fn an_empty_table_has_no_node() {
        let (t, _) = tree(0);
        let mut path = vec![7];
        assert!(!t.lookup_path(0x1000, &mut path));
        assert!(path.is_empty() && t.pages.is_empty());
    }
}
