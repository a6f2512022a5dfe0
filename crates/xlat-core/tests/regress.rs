//! Results are frozen: every case of the regression matrix (`examples/regress/matrix.rs`: every
//! preset x 4KB/THP/mosaic x six workloads x four replacement policies x data through the caches
//! off/on, 864 cases) must give a result JSON whose SHA-256 equals the one checked in at
//! `tests/data/regress-digests.txt`; every case of the design matrix (`matrix::design_cases`: the
//! configurations under `configs/{rmm,lite,mach,rainbow,virt}`, PRISM, HSCC, the software walker, nested paging, on
//! the same workloads) the one in `tests/data/design-digests.txt`, and the loop copy recorded
//! there. A change that alters a simulated count says why in its
//! commit and updates the digests on purpose:
//!
//! ```sh
//! XLAT_REGRESS_BLESS=1 cargo test --release -p xlat-core --test integration regress::
//! scripts/sim-regress.sh BASE     # the full JSON of every case against a base commit, diffed
//! ```

#[path = "../examples/regress/matrix.rs"]
pub(crate) mod matrix;

use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const DIGESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/regress-digests.txt");
const DESIGN_DIGESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/design-digests.txt");

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Every case's (name, loop copy, digest of its output), in matrix order, run on every host
/// thread; `run` gives a case's loop copy and output.
fn digests(
    cases: &[matrix::Case],
    run: impl Fn(&matrix::Case, &[xlat_trace::Batch]) -> (String, String) + Sync,
) -> Vec<(String, String, String)> {
    let mut wanted: Vec<usize> = cases.iter().map(|c| c.workload).collect();
    wanted.dedup();
    let batches: Vec<Option<Vec<xlat_trace::Batch>>> = (0..matrix::WORKLOADS.len())
        .map(|w| wanted.contains(&w).then(|| matrix::batches(matrix::WORKLOADS[w])))
        .collect();
    let next = AtomicUsize::new(0);
    let out: Vec<Mutex<(String, String)>> = cases.iter().map(|_| Mutex::default()).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let (copy, text) = run(case, batches[case.workload].as_deref().expect("decoded"));
                *out[i].lock().expect("no poisoning") = (copy, hex(&Sha256::digest(text.as_bytes())));
            });
        }
    });
    cases
        .iter()
        .zip(out)
        .map(|(c, o)| {
            let (copy, d) = o.into_inner().expect("no poisoning");
            (c.name.clone(), copy, d)
        })
        .collect()
}

/// Compare `got` with the digest file `file` (lines `DIGEST NAME`, the loop copy at the end of
/// the name where recorded), or write it when `XLAT_REGRESS_BLESS` is set.
fn check(file: &str, got: &[(String, String, String)]) {
    let line = |(name, copy, d): &(String, String, String)| {
        if copy.is_empty() {
            format!("{d} {name}\n")
        } else {
            format!("{d} {name} [{copy}]\n")
        }
    };
    let text: String = got.iter().map(line).collect();
    if std::env::var_os("XLAT_REGRESS_BLESS").is_some() {
        std::fs::write(file, &text).expect("write the digests");
        eprintln!("regress: wrote {} digests to {file}", got.len());
        return;
    }
    let want = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let want: Vec<&str> = want.lines().collect();
    let got: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(
        want.len(),
        got.len(),
        "{file} lists another matrix ({} cases, the matrix has {})",
        want.len(),
        got.len()
    );
    let differ: Vec<&str> = got.iter().zip(&want).filter(|(g, w)| g != *w).map(|(g, _)| &g[65..]).collect();
    assert!(
        differ.is_empty(),
        "{} of {} cases give other results (or run another loop copy) than the checked-in digests, first: {}\n\
         If the change is meant, say why in the commit and bless: XLAT_REGRESS_BLESS=1 cargo test --release \
         -p xlat-core --test integration regress::; to see what changed: scripts/sim-regress.sh BASE_COMMIT",
        differ.len(),
        got.len(),
        differ.iter().take(5).copied().collect::<Vec<_>>().join("; ")
    );
}

#[test]
fn the_regression_matrix_gives_the_checked_in_digests() {
    let cases = matrix::cases("");
    assert_eq!(cases.len(), 864, "the matrix has 864 cases");
    let got = digests(&cases, |c, b| (String::new(), matrix::run(c, b)));
    check(DIGESTS, &got);
}

#[test]
fn the_design_matrix_gives_the_checked_in_digests_and_loop_copies() {
    let cases = matrix::design_cases("");
    let got = digests(&cases, matrix::run_design);
    // Every design runs on some workload (a configuration refused everywhere froze nothing).
    for (label, _, _, _) in matrix::design_configs() {
        assert!(
            got.iter().any(|(n, copy, _)| n.ends_with(&format!(" {label}")) && copy != "rejected"),
            "{label} runs on no workload of the design matrix"
        );
    }
    check(DESIGN_DIGESTS, &got);
}
