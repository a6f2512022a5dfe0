//! The regression matrix of `scripts/sim-regress.sh` (see `matrix.rs`): every case's name, then
//! its result JSON; then the design matrix's, each name followed by its loop copy. Two builds of the simulator must print the same bytes.
//!
//! `cargo run --release -p xlat-core --example regress > out.txt` (`XLAT_REGRESS_ONLY=gups`: the
//! workloads whose spec contains `gups` only).

mod matrix;

use std::io::Write;

fn main() {
    let only = std::env::var("XLAT_REGRESS_ONLY").unwrap_or_default();
    let out = std::io::stdout();
    let mut out = out.lock();
    let cases = matrix::cases(&only);
    let mut loaded: Option<(usize, Vec<xlat_trace::Batch>)> = None;
    for case in &cases {
        if loaded.as_ref().map(|l| l.0) != Some(case.workload) {
            loaded = Some((case.workload, matrix::batches(matrix::WORKLOADS[case.workload])));
        }
        let batches = &loaded.as_ref().expect("loaded").1;
        writeln!(out, "{}", case.name).expect("write");
        writeln!(out, "{}", matrix::run(case, batches)).expect("write");
    }
    for case in &matrix::design_cases(&only) {
        if loaded.as_ref().map(|l| l.0) != Some(case.workload) {
            loaded = Some((case.workload, matrix::batches(matrix::WORKLOADS[case.workload])));
        }
        let (copy, text) = matrix::run_design(case, &loaded.as_ref().expect("loaded").1);
        writeln!(out, "{} [{copy}]", case.name).expect("write");
        writeln!(out, "{text}").expect("write");
    }
}
