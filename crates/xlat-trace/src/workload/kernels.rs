//! The array kernels: gups, chase, stream, stride, zipf.

use super::emit::{Emit, Generator};
use super::params::{ParamKind, ParamSpec, Params, WorkloadInfo};
use super::perm::Permutation;
use super::process::Proc;
use super::random::{below, rng, Rng};
use crate::error::Result;
use crate::event::AccessKind;
use rand::RngCore;

const SIZE_HELP: &str = "bytes of the array(s) (virtual footprint; nothing is allocated)";

pub const GUPS: WorkloadInfo = WorkloadInfo {
    name: "gups",
    help: "HPCC RandomAccess: read-modify-write (a load and a store) of random 8-byte words of a table",
    params: &[ParamSpec { name: "size", kind: ParamKind::Size, default: "1GiB", help: SIZE_HELP }],
};

pub const CHASE: WorkloadInfo = WorkloadInfo {
    name: "chase",
    help: "dependent pointer chase along one random cycle through all elements (every load depends on the last)",
    params: &[
        ParamSpec { name: "size", kind: ParamKind::Size, default: "1GiB", help: SIZE_HELP },
        ParamSpec {
            name: "elem",
            kind: ParamKind::Size,
            default: "64",
            help: "bytes per element (one pointer per element)",
        },
    ],
};

pub const STREAM: WorkloadInfo = WorkloadInfo {
    name: "stream",
    help: "STREAM kernels: sequential sweeps over 8-byte arrays, wrapping around",
    params: &[
        ParamSpec { name: "size", kind: ParamKind::Size, default: "1GiB", help: "bytes of all arrays together" },
        ParamSpec {
            name: "kernel",
            kind: ParamKind::Choice(&["read", "copy", "scale", "add", "triad"]),
            default: "triad",
            help: "read: s+=a[i]; copy: c[i]=a[i]; scale: b[i]=q*c[i]; add: c[i]=a[i]+b[i]; triad: a[i]=b[i]+q*c[i]",
        },
    ],
};

pub const STRIDE: WorkloadInfo = WorkloadInfo {
    name: "stride",
    help: "loads at a fixed stride through an array, wrapping around (shifted by 8 bytes per pass)",
    params: &[
        ParamSpec { name: "size", kind: ParamKind::Size, default: "1GiB", help: SIZE_HELP },
        ParamSpec { name: "stride", kind: ParamKind::Size, default: "4096", help: "bytes between consecutive loads" },
    ],
};

pub const ZIPF: WorkloadInfo = WorkloadInfo {
    name: "zipf",
    help: "hot/cold skew: elements drawn from a Zipf distribution, hot elements scattered over the array",
    params: &[
        ParamSpec { name: "size", kind: ParamKind::Size, default: "1GiB", help: SIZE_HELP },
        ParamSpec { name: "elem", kind: ParamKind::Size, default: "64", help: "bytes per element" },
        ParamSpec {
            name: "s",
            kind: ParamKind::Float,
            default: "0.99",
            help: "Zipf exponent (0 = uniform; larger = more skew)",
        },
        ParamSpec {
            name: "writes",
            kind: ParamKind::Float,
            default: "0",
            help: "fraction of accesses that are stores",
        },
        ParamSpec {
            name: "scatter",
            kind: ParamKind::Choice(&["element", "none"]),
            default: "element",
            help: "element: hot ranks permuted over the array; none: rank r is element r (hot data contiguous)",
        },
    ],
};

fn elements(p: &Params, size: u64, elem: u64) -> Result<u64> {
    if elem == 0 || elem > size {
        return Err(p.error(format!("elem={elem} must be between 1 and size={size}")));
    }
    Ok(size / elem)
}

pub struct Gups {
    base: u64,
    words: u64,
    rng: Rng,
}

impl Gups {
    pub fn new(p: &Params, proc: &mut Proc) -> Result<Gups> {
        let size = p.size("size");
        let words = elements(p, size, 8)?;
        Ok(Gups { base: proc.malloc(words * 8), words, rng: rng(p.int("seed"), 1) })
    }
}

impl Generator for Gups {
    fn fill(&mut self, e: &mut Emit, want: usize) {
        // ~6 instructions per update: generate the index, load, xor, store, loop.
        for _ in 0..want.div_ceil(2) {
            let a = self.base + 8 * below(self.rng.next_u64(), self.words);
            e.load(4, a);
            e.store(2, a);
        }
    }
}

pub struct Chase {
    base: u64,
    elem: u64,
    perm: Permutation,
    n: u64,
    i: u64,
}

impl Chase {
    pub fn new(p: &Params, proc: &mut Proc) -> Result<Chase> {
        let (size, elem) = (p.size("size"), p.size("elem"));
        let n = elements(p, size, elem)?;
        Ok(Chase { base: proc.malloc(n * elem), elem, perm: Permutation::new(n, p.int("seed")), n, i: 0 })
    }
}

impl Generator for Chase {
    fn fill(&mut self, e: &mut Emit, want: usize) {
        // Element perm(i) holds a pointer to element perm(i+1): one random cycle through all.
        for _ in 0..want {
            e.load(3, self.base + self.elem * self.perm.apply(self.i));
            self.i += 1;
            if self.i == self.n {
                self.i = 0;
            }
        }
    }
}

pub struct Stream {
    arrays: Vec<u64>,
    n: u64,
    i: u64,
    kernel: String,
}

impl Stream {
    pub fn new(p: &Params, proc: &mut Proc) -> Result<Stream> {
        let kernel = p.str("kernel").to_string();
        let count = match kernel.as_str() {
            "read" => 1,
            "copy" | "scale" => 2,
            _ => 3,
        };
        let n = p.size("size") / (8 * count);
        if n == 0 {
            return Err(p.error(format!("size must hold at least one 8-byte element per array ({count} arrays)")));
        }
        let arrays = (0..count).map(|_| proc.malloc(n * 8)).collect();
        Ok(Stream { arrays, n, i: 0, kernel })
    }
}

impl Generator for Stream {
    fn fill(&mut self, e: &mut Emit, want: usize) {
        let a = &self.arrays;
        let mut done = 0;
        while done < want {
            let off = 8 * self.i;
            match self.kernel.as_str() {
                "read" => e.load(2, a[0] + off),
                "copy" => {
                    e.load(2, a[0] + off);
                    e.store(1, a[1] + off);
                }
                "scale" => {
                    e.load(2, a[1] + off);
                    e.store(2, a[0] + off);
                }
                "add" => {
                    e.load(2, a[0] + off);
                    e.load(1, a[1] + off);
                    e.store(2, a[2] + off);
                }
                _ => {
                    e.load(2, a[1] + off);
                    e.load(1, a[2] + off);
                    e.store(2, a[0] + off);
                }
            }
            done += a.len(); // one access per array per element, for every kernel
            self.i += 1;
            if self.i == self.n {
                self.i = 0;
            }
        }
    }
}

pub struct Stride {
    base: u64,
    size: u64,
    stride: u64,
    off: u64,
    pass: u64,
}

impl Stride {
    pub fn new(p: &Params, proc: &mut Proc) -> Result<Stride> {
        let (size, stride) = (p.size("size"), p.size("stride"));
        if stride >= size {
            return Err(p.error(format!("stride={stride} must be smaller than size={size}")));
        }
        let size = size & !7;
        Ok(Stride { base: proc.malloc(size), size, stride, off: 0, pass: 0 })
    }
}

impl Generator for Stride {
    fn fill(&mut self, e: &mut Emit, want: usize) {
        for _ in 0..want {
            e.load(2, self.base + self.off);
            self.off += self.stride;
            if self.off + 8 > self.size {
                // Next pass starts 8 bytes further, so passes touch new words.
                self.pass += 1;
                self.off = (self.pass * 8) % self.stride.min(self.size - 8).max(8);
            }
        }
    }
}

pub struct Zipf {
    base: u64,
    elem: u64,
    dist: rand_distr::Zipf<f64>,
    perm: Option<Permutation>,
    writes: f64,
    rng: Rng,
}

impl Zipf {
    pub fn new(p: &Params, proc: &mut Proc) -> Result<Zipf> {
        let (size, elem) = (p.size("size"), p.size("elem"));
        let n = elements(p, size, elem)?;
        let s = p.float("s");
        let writes = p.float("writes");
        if s < 0.0 {
            return Err(p.error(format!("s={s} must be >= 0")));
        }
        if !(0.0..=1.0).contains(&writes) {
            return Err(p.error(format!("writes={writes} must be between 0 and 1")));
        }
        let dist = rand_distr::Zipf::new(n, s).map_err(|e| p.error(format!("Zipf({n}, {s}): {e}")))?;
        let perm = (p.str("scatter") == "element").then(|| Permutation::new(n, p.int("seed") ^ 0x5a5a));
        Ok(Zipf { base: proc.malloc(n * elem), elem, dist, perm, writes, rng: rng(p.int("seed"), 2) })
    }
}

impl Generator for Zipf {
    fn fill(&mut self, e: &mut Emit, want: usize) {
        use rand::distributions::Distribution;
        let threshold = (self.writes * (u64::MAX as f64)) as u64;
        for _ in 0..want {
            let rank = self.dist.sample(&mut self.rng) as u64 - 1;
            let idx = match &self.perm {
                Some(p) => p.apply(rank),
                None => rank,
            };
            let kind = if self.writes > 0.0 && self.rng.next_u64() <= threshold {
                AccessKind::Store
            } else {
                AccessKind::Load
            };
            e.access(6, kind, self.base + idx * self.elem, 8);
        }
    }
}
