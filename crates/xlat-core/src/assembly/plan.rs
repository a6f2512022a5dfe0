//! The plan: what a configuration's designs claim of the engine's seams decides which compiled
//! copy of the loop runs it ([`COPIES`], a small table, the first copy that serves every claim),
//! and a combination that no copy serves is refused with one sentence naming the designs,
//! generated from their claims. [`plan`] is pure: `Config::build` (so `xlat sim`, `Run.check()`
//! and the Python API) and `Simulator::new` ask the same question and get the same answer.

use crate::config::{err, Config, Result};
use crate::designs::{self, Backend, Claims, Design, Handler, Observer};

/// A compiled copy of the loop (`sim/engine.rs`'s variants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copy {
    /// The radix walker, one DRAM, page TLBs only, no observer.
    Plain,
    /// The plain copy with the staged probe (structures in the miss path).
    Staged,
    /// The staged copy counting first-level hits' LRU distance.
    Lite,
    /// The plain copy with PRISM as the observer.
    Prism,
    /// The handler translates every access (Mach).
    Mach,
    /// The hybrid memory's backend and any observer.
    Hybrid,
    /// Rainbow's memory controller and any observer, no memo.
    Rainbow,
    /// Nested paging's walker (`[virt]`), one DRAM, page TLBs only, no observer.
    Nested,
    /// A hashed page table's walker (`[hashed_pt]`), one DRAM, page TLBs only, no observer.
    Hashed,
    /// Any handler but Mach's (the radix, software, nested and hashed walkers), one DRAM or several kinds, range TLBs, any observer.
    General,
}

impl Copy {
    /// The name `Simulator::variant` reports.
    pub fn name(self) -> &'static str {
        match self {
            Copy::Plain => "plain",
            Copy::Staged => "staged",
            Copy::Lite => "lite",
            Copy::Prism => "prism",
            Copy::Mach => "mach",
            Copy::Hybrid => "hybrid",
            Copy::Rainbow => "rainbow",
            Copy::Nested => "nested",
            Copy::Hashed => "hashed",
            Copy::General => "general",
        }
    }
}

/// What a copy of the loop serves: the handlers, backends and observers it is compiled for,
/// and whether it has the staged probe, LRU distances and runs without the memo.
pub struct Serves {
    pub copy: Copy,
    pub handlers: &'static [Handler],
    pub backends: &'static [Backend],
    pub observers: &'static [Observer],
    pub miss_path: bool,
    pub lru_distance: bool,
    pub no_memo: bool,
}

use Backend as B;
use Handler as H;
use Observer as O;

/// The copies of the loop, in order of preference: a configuration runs the first that serves
/// all its claims (the plain copy when it claims nothing).
pub const COPIES: &[Serves] = &[
    Serves {
        copy: Copy::Plain,
        handlers: &[H::Radix],
        backends: &[B::Dram],
        observers: &[O::None],
        miss_path: false,
        lru_distance: false,
        no_memo: false,
    },
    Serves {
        copy: Copy::Staged,
        handlers: &[H::Radix],
        backends: &[B::Dram],
        observers: &[O::None],
        miss_path: true,
        lru_distance: false,
        no_memo: false,
    },
    Serves {
        copy: Copy::Lite,
        handlers: &[H::Radix],
        backends: &[B::Dram],
        observers: &[O::None],
        miss_path: true,
        lru_distance: true,
        no_memo: false,
    },
    Serves {
        copy: Copy::Prism,
        handlers: &[H::Radix],
        backends: &[B::Dram],
        observers: &[O::Prism],
        miss_path: false,
        lru_distance: false,
        no_memo: false,
    },
    Serves {
        copy: Copy::Mach,
        handlers: &[H::Mach],
        backends: &[B::Dram],
        observers: &[O::None],
        miss_path: false,
        lru_distance: false,
        no_memo: false,
    },
    Serves {
        copy: Copy::Hybrid,
        handlers: &[H::Radix],
        backends: &[B::Hybrid],
        observers: &[O::None, O::TlbCounts, O::External],
        miss_path: false,
        lru_distance: false,
        no_memo: false,
    },
    Serves {
        copy: Copy::Rainbow,
        handlers: &[H::Radix],
        backends: &[B::Rainbow],
        observers: &[O::None, O::TlbCounts, O::External],
        miss_path: false,
        lru_distance: false,
        no_memo: true,
    },
    Serves {
        copy: Copy::Nested,
        handlers: &[H::Nested],
        backends: &[B::Dram],
        observers: &[O::None],
        miss_path: false,
        lru_distance: false,
        no_memo: false,
    },
    Serves {
        copy: Copy::Hashed,
        handlers: &[H::Hashed],
        backends: &[B::Dram],
        observers: &[O::None],
        miss_path: false,
        lru_distance: false,
        no_memo: false,
    },
    Serves {
        copy: Copy::General,
        handlers: &[H::Radix, H::Software, H::Nested, H::Hashed],
        backends: &[B::Dram, B::Kinds],
        observers: &[O::None, O::Prism, O::External],
        miss_path: true,
        lru_distance: false,
        no_memo: false,
    },
];

/// Claim `theirs` on a seam where `mine` is claimed: `false` when the two differ.
fn claim<T: PartialEq + Clone>(mine: &mut Option<T>, theirs: &Option<T>) -> bool {
    match (&*mine, theirs) {
        (Some(a), Some(b)) if a != b => false,
        (None, Some(_)) => {
            *mine = theirs.clone();
            true
        }
        _ => true,
    }
}

/// The claims of several designs together: `None` when two claim one seam differently.
fn merge(all: &[Claims]) -> Option<Claims> {
    let mut m = Claims::default();
    for c in all {
        if !(claim(&mut m.handler, &c.handler)
            && claim(&mut m.backend, &c.backend)
            && claim(&mut m.observer, &c.observer))
        {
            return None;
        }
        m.miss_path |= c.miss_path;
        m.lru_distance |= c.lru_distance;
        m.no_memo |= c.no_memo;
    }
    Some(m)
}

/// The first copy that serves every claim in `all`, and the claims merged.
fn serve(all: &[Claims]) -> Option<(Copy, Claims)> {
    let m = merge(all)?;
    let (h, b, o) = (m.handler.unwrap_or(H::Radix), m.backend.unwrap_or(B::Dram), m.observer.unwrap_or(O::None));
    COPIES
        .iter()
        .find(|s| {
            s.handlers.contains(&h)
                && s.backends.contains(&b)
                && s.observers.contains(&o)
                && (s.miss_path || !m.miss_path)
                && s.lru_distance == m.lru_distance
                && s.no_memo == m.no_memo
        })
        .map(|s| (s.copy, m))
}

/// The caller's own access observer, as a design of the plan (`Simulator::with_observer`).
pub const EXTERNAL: Design = Design {
    name: "an access observer",
    claim: "the caller's access observer",
    present: |_| true,
    claims: |_| Claims { observer: Some(O::External), ..Claims::default() },
    controllers: |_| Vec::new(),
    walk_hooks: |_| Vec::new(),
};

/// How `cfg` is assembled: the copy of the loop, and the designs it has (in [`designs::DESIGNS`]'s
/// order).
pub struct Plan {
    pub copy: Copy,
    pub designs: Vec<&'static Design>,
    /// The observer the configuration's designs claim.
    pub observer: Observer,
}

/// The plan of `cfg` (with the caller's observer if `external`), or the sentence that refuses
/// it: the smallest set of its designs (one, two, or all) that no copy of the loop serves.
pub fn plan(cfg: &Config, external: bool) -> Result<Plan> {
    let mut ds: Vec<&'static Design> = designs::present(cfg).collect();
    if external {
        ds.push(&EXTERNAL);
    }
    let claims: Vec<Claims> = ds.iter().map(|d| (d.claims)(cfg)).collect();
    if let Some((copy, merged)) = serve(&claims) {
        let observer = merged.observer.unwrap_or(O::None);
        ds.retain(|d| !std::ptr::eq(*d, &EXTERNAL));
        return Ok(Plan { copy, designs: ds, observer });
    }
    let c = &cfg.name;
    for (i, d) in ds.iter().enumerate() {
        if serve(&claims[i..=i]).is_none() {
            return err(format!("config '{c}': no compiled copy of the loop runs {} ({}) yet.", d.name, d.claim));
        }
    }
    for i in 0..ds.len() {
        for j in i + 1..ds.len() {
            if serve(&[claims[i], claims[j]]).is_none() {
                let (a, b) = (ds[i], ds[j]);
                return err(format!(
                    "config '{c}': {} and {} cannot run together yet: no compiled copy of the loop has both {} and {}; remove one.",
                    a.name, b.name, a.claim, b.claim
                ));
            }
        }
    }
    let names: Vec<&str> = ds.iter().map(|d| d.name).collect();
    err(format!(
        "config '{c}': {} cannot run together yet: no compiled copy of the loop serves them all; remove one.",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, sets: &[&str]) -> Result<Config> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let text = std::fs::read_to_string(root.join(path)).expect("config file");
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Config::from_toml(path, &text, &sets)
    }

    fn preset(name: &str, sets: &[&str]) -> Result<Config> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Config::from_toml(name, crate::presets::get(name).expect("preset"), &sets)
    }

    #[test]
    fn every_preset_runs_the_plain_copy_and_each_design_its_own() {
        for (name, _) in crate::presets::ALL {
            assert_eq!(plan(&preset(name, &[]).unwrap(), false).unwrap().copy, Copy::Plain, "{name}");
        }
        for (path, copy) in [
            ("configs/rmm/rmm.toml", Copy::Staged),
            ("configs/rmm/ctlb.toml", Copy::Staged),
            ("configs/lite/tlb-lite.toml", Copy::Lite),
            ("configs/mach/ptlb.toml", Copy::Mach),
            ("configs/rainbow/hscc-4kb.toml", Copy::Hybrid),
            ("configs/rainbow/rainbow.toml", Copy::Rainbow),
            ("configs/virt/skylake.toml", Copy::Nested),
            ("configs/hashed/cuckoo.toml", Copy::Hashed),
        ] {
            assert_eq!(plan(&file(path, &[]).unwrap(), false).unwrap().copy, copy, "{path}");
        }
        let prism = ["os.metadata=registry", "prism.enabled=true"];
        assert_eq!(plan(&preset("skylake", &prism).unwrap(), false).unwrap().copy, Copy::Prism);
        let p = plan(&file("configs/rmm/rmm.toml", &prism).unwrap(), false).unwrap();
        assert_eq!((p.copy, p.observer), (Copy::General, Observer::Prism));
        // The caller's observer: the general copy, or the hybrid memory's.
        assert_eq!(plan(&preset("skylake", &[]).unwrap(), true).unwrap().copy, Copy::General);
        let p = plan(&file("configs/rainbow/hscc-2mb.toml", &["hybrid.counting=memory"]).unwrap(), true).unwrap();
        assert_eq!((p.copy, p.observer), (Copy::Hybrid, Observer::External));
    }

    #[test]
    fn what_no_copy_runs_is_one_sentence_from_the_claims() {
        // The review's reproduction: TLB_Lite plus PRISM passed the configuration's checks and
        // failed in the simulator; now the configuration is refused, with the simulator's words.
        let e = file("configs/lite/tlb-lite.toml", &["os.metadata=registry", "prism.enabled=true"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "config 'lite-tlb-lite': [lite] and [prism] cannot run together yet: no compiled copy of the loop has \
             both first-level hits counted by LRU distance and PRISM's access observer; remove one."
        );
        let e = file("configs/mach/tlb-only.toml", &["walker.kind=software"]).unwrap_err().to_string();
        assert!(e.contains("[mach] and walker.kind = \"software\" cannot run together yet"), "{e}");
        let ctlb = ["cluster_tlb.entries=512", "cluster_tlb.cluster=8", "cluster_tlb.stage=2"];
        let e = file("configs/rainbow/hscc-4kb.toml", &ctlb).unwrap_err().to_string();
        assert!(e.contains("[cluster_tlb] and [hybrid] cannot run together yet"), "{e}");
        // Two claims on the observer seam: HSCC's TLB counts and PRISM.
        let e = file("configs/rainbow/hscc-4kb.toml", &["os.metadata=registry", "prism.enabled=true"]).unwrap_err();
        assert!(e.to_string().contains("[prism] and [hybrid] cannot run together yet"), "{e}");
        // The caller's observer where the copy has none, or a design claims the seam.
        let lite = file("configs/lite/tlb-lite.toml", &[]).unwrap();
        let e = plan(&lite, true).err().expect("refused").to_string();
        assert!(e.contains("[lite] and an access observer cannot run together yet"), "{e}");
        let hscc = file("configs/rainbow/hscc-4kb.toml", &[]).unwrap();
        let e = plan(&hscc, true).err().expect("refused").to_string();
        assert!(e.contains("[hybrid] and an access observer cannot run together yet"), "{e}");
    }

    #[test]
    fn claims_merge_seam_by_seam_and_the_table_serves_them() {
        // The staged probe goes with LRU distances (the lite copy) or with PRISM (the general
        // copy), LRU distances with no observer.
        let a = Claims { miss_path: true, ..Claims::default() };
        let b = Claims { lru_distance: true, ..Claims::default() };
        let c = Claims { observer: Some(O::Prism), ..Claims::default() };
        assert!(serve(&[a, b]).is_some() && serve(&[a, c]).is_some());
        assert_eq!(serve(&[b, c]), None);
        assert_eq!(serve(&[a, b, c]), None);
        assert_eq!(serve(&[]).map(|s| s.0), Some(Copy::Plain));
        assert_eq!(merge(&[c, Claims { observer: Some(O::TlbCounts), ..Claims::default() }]), None);
    }
}
