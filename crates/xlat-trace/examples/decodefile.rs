//! Decode a trace file into one reused batch, as the simulator does, and report the accesses
//! read and the time taken. With `--hash`, also print a hash of every decoded field (addresses,
//! instruction counts, threads, sizes, kinds, side events and batch boundaries), to check that
//! two decoder versions produce identical batches.
//!
//! `cargo run --release -p xlat-trace --example decodefile -- [--hash] TRACE...`

use std::hash::{Hash, Hasher};
use std::time::Instant;
use xlat_trace::{source, Batch};

fn main() {
    let mut hash = false;
    for arg in std::env::args().skip(1) {
        if arg == "--hash" {
            hash = true;
            continue;
        }
        let t = Instant::now();
        let mut src = source::open(&arg).unwrap_or_else(|e| panic!("{arg}: {e}"));
        let mut b = Batch::default();
        let (mut accesses, mut sides, mut batches) = (0u64, 0u64, 0u64);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        while src.next_batch(&mut b).unwrap_or_else(|e| panic!("{arg}: {e}")) {
            accesses += b.len() as u64;
            sides += b.side.len() as u64;
            batches += 1;
            if hash {
                b.len().hash(&mut h);
                b.addr.hash(&mut h);
                b.icount.hash(&mut h);
                b.tid.hash(&mut h);
                b.size.hash(&mut h);
                b.kind.hash(&mut h);
                format!("{:?}", b.side).hash(&mut h);
            }
        }
        let s = t.elapsed().as_secs_f64();
        print!("{arg}: {accesses} accesses, {sides} side events, {batches} batches, {s:.3} s");
        if hash {
            print!(", hash {:016x}", h.finish());
        }
        println!();
    }
}
