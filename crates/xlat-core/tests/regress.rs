//! Results are frozen: every case of the regression matrix (`examples/regress/matrix.rs`: every
//! preset x 4KB/THP/mosaic x six workloads x four replacement policies x data through the caches
//! off/on, 864 cases) must give a result JSON whose SHA-256 equals the one checked in at
//! `tests/data/regress-digests.txt`. A change that alters a simulated count says why in its
//! commit and updates the digests on purpose:
//!
//! ```sh
//! XLAT_REGRESS_BLESS=1 cargo test --release -p xlat-core --test regress
//! scripts/sim-regress.sh BASE     # the full JSON of every case against a base commit, diffed
//! ```

#[path = "../examples/regress/matrix.rs"]
mod matrix;

use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const DIGESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/regress-digests.txt");

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Every case's (name, digest of its output), in matrix order, run on every host thread.
fn digests() -> Vec<(String, String)> {
    let cases = matrix::cases("");
    let batches: Vec<Vec<xlat_trace::Batch>> = matrix::WORKLOADS.iter().map(|w| matrix::batches(w)).collect();
    let next = AtomicUsize::new(0);
    let out: Vec<Mutex<String>> = cases.iter().map(|_| Mutex::new(String::new())).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let text = matrix::run(case, &batches[case.workload]);
                *out[i].lock().expect("no poisoning") = hex(&Sha256::digest(text.as_bytes()));
            });
        }
    });
    cases.iter().zip(out).map(|(c, d)| (c.name.clone(), d.into_inner().expect("no poisoning"))).collect()
}

#[test]
fn the_regression_matrix_gives_the_checked_in_digests() {
    let got = digests();
    assert_eq!(got.len(), 864, "the matrix has 864 cases");
    let text: String = got.iter().map(|(name, d)| format!("{d} {name}\n")).collect();
    if std::env::var_os("XLAT_REGRESS_BLESS").is_some() {
        std::fs::write(DIGESTS, &text).expect("write the digests");
        eprintln!("regress: wrote {} digests to {DIGESTS}", got.len());
        return;
    }
    let want = std::fs::read_to_string(DIGESTS).expect("tests/data/regress-digests.txt");
    let want: Vec<(&str, &str)> =
        want.lines().map(|l| l.split_once(' ').expect("DIGEST NAME")).map(|(d, n)| (n, d)).collect();
    assert_eq!(want.len(), got.len(), "the digest file lists another matrix");
    let differ: Vec<&str> =
        got.iter().zip(&want).filter(|((n, d), (wn, wd))| n != wn || d != wd).map(|((n, _), _)| n.as_str()).collect();
    assert!(
        differ.is_empty(),
        "{} of {} cases give other results than the checked-in digests, first: {}\n\
         If the change is meant, say why in the commit and bless: XLAT_REGRESS_BLESS=1 cargo test --release \
         -p xlat-core --test regress; to see what changed: scripts/sim-regress.sh BASE_COMMIT",
        differ.len(),
        got.len(),
        differ.iter().take(5).copied().collect::<Vec<_>>().join("; ")
    );
}
