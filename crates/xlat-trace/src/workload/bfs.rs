//! Breadth-first search over an R-MAT graph in CSR form (Graph500 kernel 2).
//!
//! The graph is real: R-MAT edges (a, b, c = 0.57, 0.19, 0.19; edge factor 16) with vertex labels
//! scrambled by a permutation, made undirected and stored as CSR. It is materialised in memory
//! (4 bytes per directed edge here), so `scale` is limited by this machine's memory, unlike the
//! array kernels. The trace shows the accesses of the C code:
//!
//! ```c
//! for (;;) { root = random vertex with edges; memset(parent, -1, n*8); parent[root] = root;
//!   queue[0] = root; head = 0; tail = 1;
//!   while (head < tail) { v = queue[head++];
//!     for (e = row[v]; e < row[v+1]; e++) { w = col[e];
//!       if (parent[w] == -1) { parent[w] = v; queue[tail++] = w; } } } }
//! ```

use super::emit::{Emit, Generator};
use super::params::{ParamKind, ParamSpec, Params, WorkloadInfo};
use super::perm::Permutation;
use super::process::Proc;
use super::random::{below, rng, Rng};
use crate::error::Result;
use crate::event::AccessKind;
use rand::RngCore;

pub const BFS: WorkloadInfo = WorkloadInfo {
    name: "bfs",
    help: "breadth-first search from random roots over an R-MAT graph (Graph500 parameters) in CSR",
    params: &[
        ParamSpec {
            name: "scale",
            kind: ParamKind::Int,
            default: "18",
            help: "log2 of the vertex count (graph held in memory: ~2^scale * 130 bytes)",
        },
        ParamSpec { name: "edgefactor", kind: ParamKind::Int, default: "16", help: "edges per vertex" },
        ParamSpec {
            name: "a",
            kind: ParamKind::Float,
            default: "0.57",
            help: "R-MAT probability of the top-left quadrant",
        },
        ParamSpec {
            name: "b",
            kind: ParamKind::Float,
            default: "0.19",
            help: "R-MAT probability of the top-right quadrant",
        },
        ParamSpec {
            name: "c",
            kind: ParamKind::Float,
            default: "0.19",
            help: "R-MAT probability of the bottom-left quadrant",
        },
    ],
};

const UNVISITED: u32 = u32::MAX;

pub struct Bfs {
    n: u64,
    row: Vec<u64>,
    col: Vec<u32>,
    parent: Vec<u32>,
    queue: Vec<u32>,
    head: usize,
    tail: usize,
    // Virtual addresses of the arrays (8-byte elements, as in Graph500's int64 code).
    va_row: u64,
    va_col: u64,
    va_parent: u64,
    va_queue: u64,
    rng: Rng,
    /// Where the next BFS resets `parent` (memset in 32-byte stores), or n*8 when done.
    memset_at: u64,
}

/// Generate an undirected R-MAT graph in CSR form.
fn rmat(scale: u32, edgefactor: u64, a: f64, b: f64, c: f64, seed: u64) -> (Vec<u64>, Vec<u32>) {
    let n = 1u64 << scale;
    let m = n * edgefactor;
    let mut r = rng(seed, 3);
    let perm = Permutation::new(n, seed ^ 0xb5);
    let (ta, tb, tc) =
        ((a * 2f64.powi(32)) as u64, ((a + b) * 2f64.powi(32)) as u64, ((a + b + c) * 2f64.powi(32)) as u64);
    let mut edges: Vec<(u32, u32)> = Vec::with_capacity(m as usize);
    for _ in 0..m {
        let (mut u, mut v) = (0u64, 0u64);
        let mut bits = 0u64;
        let mut left = 0;
        for _ in 0..scale {
            if left == 0 {
                bits = r.next_u64();
                left = 2;
            }
            let x = bits & 0xffff_ffff;
            bits >>= 32;
            left -= 1;
            u <<= 1;
            v <<= 1;
            if x < ta {
            } else if x < tb {
                v |= 1;
            } else if x < tc {
                u |= 1;
            } else {
                u |= 1;
                v |= 1;
            }
        }
        let (u, v) = (perm.apply(u) as u32, perm.apply(v) as u32);
        if u != v {
            edges.push((u, v));
        }
    }
    let mut deg = vec![0u64; n as usize + 1];
    for &(u, v) in &edges {
        deg[u as usize + 1] += 1;
        deg[v as usize + 1] += 1;
    }
    for i in 0..n as usize {
        deg[i + 1] += deg[i];
    }
    let row = deg.clone();
    let mut fill = deg;
    let mut col = vec![0u32; edges.len() * 2];
    for &(u, v) in &edges {
        col[fill[u as usize] as usize] = v;
        fill[u as usize] += 1;
        col[fill[v as usize] as usize] = u;
        fill[v as usize] += 1;
    }
    (row, col)
}

impl Bfs {
    pub fn new(p: &Params, proc: &mut Proc) -> Result<Bfs> {
        let scale = p.int("scale");
        let edgefactor = p.int("edgefactor");
        let (a, b, c) = (p.float("a"), p.float("b"), p.float("c"));
        if !(1..=28).contains(&scale) {
            return Err(p.error(format!("scale={scale} must be between 1 and 28 (the graph is held in memory)")));
        }
        if !(1..=64).contains(&edgefactor) {
            return Err(p.error(format!("edgefactor={edgefactor} must be between 1 and 64")));
        }
        if a < 0.0 || b < 0.0 || c < 0.0 || a + b + c > 1.0 {
            return Err(p.error(format!("R-MAT probabilities a={a}, b={b}, c={c} must be >= 0 and sum to at most 1")));
        }
        let (row, col) = rmat(scale as u32, edgefactor, a, b, c, p.int("seed"));
        let n = 1u64 << scale;
        let va_row = proc.malloc((n + 1) * 8);
        let va_col = proc.malloc((col.len() as u64).max(1) * 8);
        let va_parent = proc.malloc(n * 8);
        let va_queue = proc.malloc(n * 8);
        Ok(Bfs {
            n,
            row,
            col,
            parent: vec![UNVISITED; n as usize],
            queue: vec![0; n as usize],
            head: 0,
            tail: 0,
            va_row,
            va_col,
            va_parent,
            va_queue,
            rng: rng(p.int("seed"), 4),
            memset_at: n * 8,
        })
    }

    fn start(&mut self, e: &mut Emit) {
        // Pick a root with at least one edge (Graph500 does the same); give up after many tries
        // on an edgeless graph and search from vertex 0.
        let mut root = 0;
        for _ in 0..1000 {
            let v = below(self.rng.next_u64(), self.n);
            if self.row[v as usize + 1] > self.row[v as usize] {
                root = v;
                break;
            }
        }
        self.parent.fill(UNVISITED);
        self.parent[root as usize] = root as u32;
        e.store(2, self.va_parent + 8 * root);
        self.queue[0] = root as u32;
        e.store(1, self.va_queue);
        self.head = 0;
        self.tail = 1;
    }
}

impl Generator for Bfs {
    fn fill(&mut self, e: &mut Emit, want: usize) {
        let start = e.len();
        while e.len() - start < want {
            if self.memset_at < self.n * 8 {
                e.access(1, AccessKind::Store, self.va_parent + self.memset_at, 32);
                self.memset_at += 32;
                if self.memset_at >= self.n * 8 {
                    self.start(e);
                }
                continue;
            }
            if self.head >= self.tail {
                self.memset_at = 0;
                continue;
            }
            let v = self.queue[self.head] as u64;
            e.load(2, self.va_queue + 8 * self.head as u64);
            self.head += 1;
            e.load(1, self.va_row + 8 * v);
            e.load(1, self.va_row + 8 * (v + 1));
            let (lo, hi) = (self.row[v as usize], self.row[v as usize + 1]);
            for k in lo..hi {
                let w = self.col[k as usize] as u64;
                e.load(2, self.va_col + 8 * k);
                e.load(1, self.va_parent + 8 * w);
                if self.parent[w as usize] == UNVISITED {
                    self.parent[w as usize] = v as u32;
                    e.store(2, self.va_parent + 8 * w);
                    e.store(1, self.va_queue + 8 * self.tail as u64);
                    self.queue[self.tail] = w as u32;
                    self.tail += 1;
                }
            }
        }
    }
}
