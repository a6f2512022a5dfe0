//! The host memory a configuration's structures need, checked before any is allocated: a
//! configuration that does not fit is refused in one sentence naming its largest structures
//! and the memory available, instead of aborting in the allocator.

use super::parse::{err, Result};
use super::Config;

/// Bytes an entry of a TLB or paging-structure cache takes at least: its tag and payload words
/// (`array::SetAssoc`; replacement state and alignment add to it).
const TAGGED_ENTRY: u64 = 16;
/// Bytes a cache line's entry takes at least (tags only).
const CACHE_ENTRY: u64 = 8;
/// Bytes a free block of the buddy allocator takes at least (a B-tree key and its share of
/// a node), and the order of the blocks it starts with (2MB, or `max_order` when smaller).
const FREE_BLOCK: u64 = 16;

/// The structures of `cfg` and the host bytes each takes at least, largest first.
pub fn footprint(cfg: &Config) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = Vec::new();
    for t in &cfg.tlb {
        v.push((format!("tlb '{}'", t.name), t.entries.saturating_mul(TAGGED_ENTRY)));
    }
    for p in &cfg.psc {
        v.push((format!("psc '{}'", p.name), p.entries.saturating_mul(TAGGED_ENTRY)));
    }
    for c in &cfg.cache {
        let lines = c.size.0 / c.line.max(1);
        v.push((format!("cache '{}'", c.name), lines.saturating_mul(CACHE_ENTRY)));
    }
    let blocks = cfg.memory.frames() >> cfg.memory.max_order.min(9);
    v.push(("the buddy allocator's free lists".into(), blocks.saturating_mul(FREE_BLOCK)));
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// Refuse `cfg` when its structures need more than `available` bytes (`None`: unknown, no
/// check).
pub fn check_host_memory(cfg: &Config, available: Option<u64>) -> Result<()> {
    let Some(avail) = available else { return Ok(()) };
    let parts = footprint(cfg);
    let total = parts.iter().fold(0u64, |a, p| a.saturating_add(p.1));
    if total <= avail {
        return Ok(());
    }
    // The (up to three) structures that make up the bulk: each at least 1/20 of the total.
    let largest: Vec<String> =
        parts.iter().take(3).filter(|p| p.1 >= total / 20).map(|(n, b)| format!("{n} {}", gb(*b))).collect();
    err(format!(
        "config '{}': its structures need at least {} of host memory ({}), more than the {} available on this machine; make them smaller.",
        cfg.name,
        gb(total),
        largest.join(", "),
        gb(avail)
    ))
}

/// Refuse configurations that run at once (`at_once` of them, each on a thread, or all of
/// them when they share one decoded input) when, together, the `at_once` largest need more than
/// `available` bytes; each alone is checked by [`check_host_memory`] when its simulator is
/// built.
pub fn check_host_memory_together(cfgs: &[Config], at_once: usize, available: Option<u64>) -> Result<()> {
    let Some(avail) = available else { return Ok(()) };
    if at_once < 2 || cfgs.len() < 2 {
        return Ok(());
    }
    let mut need: Vec<(u64, &str)> =
        cfgs.iter().map(|c| (footprint(c).iter().fold(0u64, |a, p| a.saturating_add(p.1)), c.name.as_str())).collect();
    need.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    need.truncate(at_once);
    let total = need.iter().fold(0u64, |a, n| a.saturating_add(n.0));
    if total <= avail || need.iter().any(|n| n.0 > avail) {
        // (One that does not fit alone is refused in its own words when it is built.)
        return Ok(());
    }
    let names: Vec<String> = need.iter().map(|(b, n)| format!("'{n}' {}", gb(*b))).collect();
    err(format!(
        "{} configurations run at once and their structures need at least {} of host memory together ({}), more than the {} available on this machine; run them one at a time or make them smaller.",
        need.len(),
        gb(total),
        names.join(", "),
        gb(avail)
    ))
}

fn gb(b: u64) -> String {
    format!("{:.1} GB", b as f64 / 1e9)
}

/// The host memory a run may use: `XLAT_MEM_AVAILABLE` (bytes) if set, else the smallest of
/// `/proc/meminfo`'s MemAvailable, the room left under a cgroup v2 memory limit and the
/// address space left under `ulimit -v` (RLIMIT_AS, less this process's VmSize); `None` when
/// none is known.
pub fn mem_available() -> Option<u64> {
    if let Some(v) = std::env::var("XLAT_MEM_AVAILABLE").ok().and_then(|v| v.trim().parse().ok()) {
        return Some(v);
    }
    let info = std::fs::read_to_string("/proc/meminfo").ok();
    let avail = info.as_deref().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    });
    let read = |f: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{f}")).ok()?.trim().parse::<u64>().ok();
    let cgroup = read("memory.max").map(|max| max.saturating_sub(read("memory.current").unwrap_or(0)));
    [avail, cgroup, address_space_left()].into_iter().flatten().min()
}

/// The address space this process may still map under RLIMIT_AS (`ulimit -v`), if limited.
fn address_space_left() -> Option<u64> {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    // VmSize: the first field of /proc/self/statm, in pages.
    let pages: u64 = std::fs::read_to_string("/proc/self/statm").ok()?.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Some(r.rlim_cur.saturating_sub(pages * page))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PSCS: &str = "name = \"big\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"data\"\nentries = 64\nways = 4\n\
        page_sizes = [\"4KB\"]\nlatency = 1\n\
        [[psc]]\nname = \"pde\"\ncaches = \"pde\"\nentries = 268435456\nways = 4\n\
        [[psc]]\nname = \"pdpte\"\ncaches = \"pdpte\"\nentries = 268435456\nways = 4\n";

    #[test]
    fn two_pscs_at_the_cap_are_refused_naming_them() {
        let cfg = Config::from_toml("t.toml", PSCS, &[]).unwrap();
        let f = footprint(&cfg);
        // 2^28 entries x 16 bytes each; the buddy: 64GiB in 2MB blocks x 16 bytes.
        assert_eq!(f[0], ("psc 'pde'".to_string(), 4_294_967_296));
        assert_eq!(f[1], ("psc 'pdpte'".to_string(), 4_294_967_296));
        assert_eq!(f[2], ("the buddy allocator's free lists".to_string(), 32768 * 16));
        let e = check_host_memory(&cfg, Some(3 << 30)).unwrap_err().0;
        assert_eq!(
            e,
            "config 'big': its structures need at least 8.6 GB of host memory (psc 'pde' 4.3 GB, psc 'pdpte' 4.3 GB), \
             more than the 3.2 GB available on this machine; make them smaller."
        );
        assert!(check_host_memory(&cfg, Some(9 << 30)).is_ok());
        assert!(check_host_memory(&cfg, None).is_ok());
    }

    #[test]
    fn configurations_that_run_at_once_are_checked_together() {
        // Two configurations of 4.3 GB each (one big PSC): each fits 6 GB, both at once do not.
        let one = |name: &str| {
            let text = PSCS.replacen("name = \"big\"", &format!("name = \"{name}\""), 1);
            let text = text.replacen(
                "[[psc]]\nname = \"pdpte\"\ncaches = \"pdpte\"\nentries = 268435456",
                "[[psc]]\nname = \"pdpte\"\ncaches = \"pdpte\"\nentries = 16",
                1,
            );
            Config::from_toml("t.toml", &text, &[]).unwrap()
        };
        let cfgs = [one("a"), one("b")];
        let six = Some(6_000_000_000);
        assert!(cfgs.iter().all(|c| check_host_memory(c, six).is_ok()));
        let e = check_host_memory_together(&cfgs, 2, six).unwrap_err().0;
        assert_eq!(
            e,
            "2 configurations run at once and their structures need at least 8.6 GB of host memory together \
             ('a' 4.3 GB, 'b' 4.3 GB), more than the 6.0 GB available on this machine; run them one at a time or \
             make them smaller."
        );
        assert!(check_host_memory_together(&cfgs, 1, six).is_ok(), "one at a time");
        assert!(check_host_memory_together(&cfgs, 2, Some(9_000_000_000)).is_ok());
        assert!(address_space_left().is_none() || address_space_left().unwrap() > 0);
    }
}
