//! Where the recorder writes each traced process's trace (see [`super::qemu::record`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where the trace of forked child `pid` goes: `OUT` without a trailing `.xlat`, then
/// `.<pid>.xlat` (`run.xlat` -> `run.4242.xlat`).
pub fn child_trace_path(out: &Path, pid: u32) -> PathBuf {
    let s = out.to_string_lossy();
    let stem = s.strip_suffix(".xlat").unwrap_or(&s);
    PathBuf::from(format!("{stem}.{pid}.xlat"))
}

/// The paths given out so far. A process that runs another program (execve, traced under QEMU
/// again) connects a second time with the same pid: each connection of a pid takes the first free
/// name (`run.4242.xlat`, then `run.4242.1.xlat`, ...; the first process's second program gets
/// `run.<pid>.xlat`), in the order the connections' threads ask.
#[derive(Default)]
pub struct Paths(Mutex<HashSet<PathBuf>>);

impl Paths {
    /// The path for process `pid` (`root`: the program `xlat trace` started).
    pub fn take(&self, out: &Path, pid: u32, root: bool) -> PathBuf {
        let mut used = self.0.lock().expect("no poisoning");
        if root && used.insert(out.to_path_buf()) {
            return out.to_path_buf();
        }
        let first = child_trace_path(out, pid);
        let mut path = first.clone();
        let mut n = 1;
        while !used.insert(path.clone()) {
            path = child_trace_path(&first, n);
            n += 1;
        }
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_seen_again_gets_the_next_name() {
        let p = Paths::default();
        let out = Path::new("a/run.xlat");
        assert_eq!(p.take(out, 7, true), PathBuf::from("a/run.xlat"));
        assert_eq!(p.take(out, 7, true), PathBuf::from("a/run.7.xlat"));
        assert_eq!(p.take(out, 9, false), PathBuf::from("a/run.9.xlat"));
        assert_eq!(p.take(out, 9, false), PathBuf::from("a/run.9.1.xlat"));
        assert_eq!(p.take(out, 9, false), PathBuf::from("a/run.9.2.xlat"));
    }
}
