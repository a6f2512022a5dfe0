//! What a design is to the assembly room: its claims on the engine's seams, and the [`Design`]
//! entry each file of the wing declares (a leaf: the wing's files and the room share it).

use crate::config::Config;
use crate::mmu::hook::WalkHook;
use crate::sim::epoch::EpochController;

/// Which miss handler a design needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// The x86-64 radix walker (the default).
    Radix,
    /// A software handler over a linear page table (`walker.kind = "software"`).
    Software,
    /// Mach 3.0's handlers, which hold the machine's only TLB and translate every access.
    Mach,
    /// Nested paging's two-dimensional walker (`[virt]`).
    Nested,
    /// A hashed page table's lookup (`[hashed_pt]`).
    Hashed,
}

/// Which memory backend a design needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One DRAM (the default).
    Dram,
    /// Several memory kinds, pages placed by `os.tiering` (`memory.kinds`).
    Kinds,
    /// A hybrid DRAM/NVM memory with migration (HSCC's baselines, `[hybrid]`).
    Hybrid,
    /// Rainbow's memory controller (`hybrid.migration = "rainbow"`).
    Rainbow,
}

/// Which code sees every access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observer {
    /// None (the default).
    None,
    /// PRISM's access and dirty bits (`mmu/prism.rs`).
    Prism,
    /// HSCC's counting in the TLB (`hybrid.counting = "tlb"`).
    TlbCounts,
    /// One the caller passes (`Simulator::with_observer`: the analyses).
    External,
}

/// What a design claims of the seams; `None` or `false`: nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Claims {
    pub handler: Option<Handler>,
    pub backend: Option<Backend>,
    pub observer: Option<Observer>,
    /// Structures in the miss path besides the page TLBs (range TLBs, the clustered TLB, the
    /// direct segment): the staged probe.
    pub miss_path: bool,
    /// First-level hits count their LRU distance (Lite's way-disabling reads them).
    pub lru_distance: bool,
    /// No memo of first-level hits (a 4KB entry must win over a 2MB one that also holds the
    /// page: Rainbow's DRAM copies inside NVM superpages).
    pub no_memo: bool,
}

/// One design: its name as sentences give it, when a configuration has it, its claims and its
/// epoch controllers.
pub struct Design {
    /// How a sentence names it: its section or key (`[lite]`, `walker.kind = "software"`).
    pub name: &'static str,
    /// What it claims, in the words of a sentence that refuses a combination ("counts
    /// first-level hits' LRU distance").
    pub claim: &'static str,
    /// Whether `cfg` has it.
    pub present: fn(&Config) -> bool,
    /// What it claims of the seams under `cfg` (called only when present).
    pub claims: fn(&Config) -> Claims,
    /// The epoch controllers it runs under `cfg`, in order (called only when present).
    pub controllers: fn(&Config) -> Vec<Box<dyn EpochController>>,
    /// The code it runs after each walk under `cfg` (called only when present; a design with
    /// walk hooks claims `miss_path`: they run in the copies with the staged probe).
    pub walk_hooks: fn(&Config) -> Vec<Box<dyn WalkHook>>,
}

/// No walk hook.
pub fn no_hooks(_: &Config) -> Vec<Box<dyn WalkHook>> {
    Vec::new()
}

/// No epoch controller.
pub fn none(_: &Config) -> Vec<Box<dyn EpochController>> {
    Vec::new()
}
