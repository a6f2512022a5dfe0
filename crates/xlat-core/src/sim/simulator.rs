//! The public face of the simulator: builds the compiled copy of the loop a configuration needs
//! and dispatches to it once per batch; `simulate` runs a whole trace.

use super::engine::{Core, General, HybridLoop, LiteLoop, MachLoop, Plain, PrismLoop, RainbowLoop, Staged, Variant};
use super::epoch::EpochController;
use super::observer::{AccessObserver, NoObserver};
use super::result::SimResult;
use super::shape;
use crate::config::{Config, WalkerKind};
use crate::mem::backend::{AnyBackend, Dram};
use crate::mmu::walker::{AnyHandler, RadixWalker, SoftwareHandler};
use crate::os::{Os, SimError};
use std::collections::BTreeMap;
use xlat_trace::{Batch, EventSource};

/// Where the simulation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Trace(#[from] xlat_trace::Error),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// A count that must hold after every run did not: a bug of xlat's, not of the input.
    #[error("simulator invariant violated: {0} (a bug in xlat; please report it with the trace and configuration)")]
    Invariant(String),
}

/// What the public face needs of a compiled copy (one virtual call per batch).
trait Engine: Send {
    fn batch(&mut self, b: &Batch) -> Result<(), SimError>;
    fn counters(&self) -> BTreeMap<String, u64>;
    fn derived(&self, c: &BTreeMap<String, u64>) -> BTreeMap<String, f64>;
    fn check_invariants(&self) -> Result<(), String>;
    fn result(&self, trace: &str) -> SimResult;
    fn config(&self) -> &Config;
    fn os(&self) -> &Os;
    fn add_controller(&mut self, c: Box<dyn EpochController>) -> Result<(), String>;
    fn shape(&self) -> &'static str;
    fn set_shaped(&mut self, on: bool);
    fn mmu(&self) -> &crate::mmu::Mmu;
}

impl<V: Variant> Engine for Core<V>
where
    V::Handler: 'static,
{
    fn batch(&mut self, b: &Batch) -> Result<(), SimError> {
        Core::batch(self, b)
    }
    fn counters(&self) -> BTreeMap<String, u64> {
        self.counter_map()
    }
    fn derived(&self, c: &BTreeMap<String, u64>) -> BTreeMap<String, f64> {
        Core::derived(self, c)
    }
    fn check_invariants(&self) -> Result<(), String> {
        Core::check_invariants(self)
    }
    fn result(&self, trace: &str) -> SimResult {
        Core::result(self, trace)
    }
    fn config(&self) -> &Config {
        &self.cfg
    }
    fn os(&self) -> &Os {
        &self.os
    }
    fn add_controller(&mut self, c: Box<dyn EpochController>) -> Result<(), String> {
        Core::add_controller(self, c)
    }
    fn shape(&self) -> &'static str {
        if self.skylake_shape {
            "skylake"
        } else {
            "any"
        }
    }
    fn set_shaped(&mut self, on: bool) {
        self.skylake_shape = on && self.has_shape::<shape::SkylakeShape>();
    }
    fn mmu(&self) -> &crate::mmu::Mmu {
        &self.mmu
    }
}

/// The simulator of one configuration.
pub struct Simulator {
    engine: Box<dyn Engine>,
    variant: &'static str,
}

impl Simulator {
    /// The simulator of `cfg`: the plain loop when the configuration has nothing else (the
    /// radix walker, one DRAM, page TLBs only), else the general one.
    pub fn new(cfg: &Config) -> Result<Simulator, Error> {
        cfg.validate()?;
        // Before anything is allocated: refuse what does not fit in the host's memory.
        crate::config::footprint::check_host_memory(cfg, crate::config::footprint::mem_available())?;
        if cfg.prism().is_some() && cfg.lite.is_some() {
            crate::config::err(format!("config '{}': [lite] and [prism] cannot run together yet.", cfg.name))?;
        }
        if cfg.mach.is_some() && cfg.hybrid.is_some() {
            crate::config::err(format!("config '{}': [mach] and [hybrid] cannot run together yet.", cfg.name))?;
        }
        let sim = if cfg.mach.is_some() {
            let core = Core::<MachLoop>::new(cfg, crate::mmu::mach::MachHandler::new(cfg), Dram, NoObserver)?;
            Simulator { engine: Box::new(core), variant: "mach" }
        } else if let Some(h) = &cfg.hybrid {
            if h.counting == crate::config::Counting::Tlb {
                let group = if h.granularity == crate::config::Granularity::Page2M { 512 } else { 1 };
                Self::hybrid(cfg, super::tlbcount::TlbCounts::new((cfg.memory.size.0 >> 12) as usize, group))?
            } else {
                Self::hybrid(cfg, NoObserver)?
            }
        } else if cfg.prism().is_some() && Self::is_plain(cfg) {
            // PRISM on the plain configuration: the plain loop with its structure as the observer.
            let core = Core::<PrismLoop>::new(cfg, RadixWalker::new(cfg), Dram, crate::mmu::prism::Prism::new(cfg))?;
            Simulator { engine: Box::new(core), variant: "prism" }
        } else if cfg.prism().is_some() {
            // PRISM with other structures: the general loop with it as the access observer.
            Self::general(cfg, crate::mmu::prism::Prism::new(cfg))?
        } else if cfg.lite.is_some() {
            if !Self::is_staged(cfg) {
                crate::config::err(format!(
                    "config '{}': [lite] needs a single DRAM memory (no memory.kinds).",
                    cfg.name
                ))?;
            }
            let core = Core::<LiteLoop>::new(cfg, RadixWalker::new(cfg), Dram, NoObserver)?;
            Simulator { engine: Box::new(core), variant: "lite" }
        } else if Self::is_plain(cfg) {
            let core = Core::<Plain>::new(cfg, RadixWalker::new(cfg), Dram, NoObserver)?;
            Simulator { engine: Box::new(core), variant: "plain" }
        } else if Self::is_staged(cfg) {
            let core = Core::<Staged>::new(cfg, RadixWalker::new(cfg), Dram, NoObserver)?;
            Simulator { engine: Box::new(core), variant: "staged" }
        } else {
            Self::general(cfg, NoObserver)?
        };
        sim.with_configured_controllers()
    }

    /// Add the epoch controllers the configuration asks for (`sim.contiguity_every`).
    fn with_configured_controllers(mut self) -> Result<Simulator, Error> {
        if let Some(l) = &self.config().lite {
            let c = super::lite::Lite::new(self.config(), l);
            self.add_controller(Box::new(c)).map_err(Error::Invariant)?;
        }
        if let Some(h) = self.config().hybrid.clone() {
            use crate::config::MigrationPolicy;
            match h.migration {
                MigrationPolicy::None => {}
                MigrationPolicy::Utility => {
                    self.add_controller(Box::new(super::hybrid::Migration::new(&h))).map_err(Error::Invariant)?
                }
                MigrationPolicy::Rainbow => self
                    .add_controller(Box::new(super::rainbow::RainbowMigration::new(&h)))
                    .map_err(Error::Invariant)?,
            }
        }
        let sim = &self.config().sim;
        if sim.contiguity_every > 0 {
            let c = super::contiguity::ContiguityEpochs::new(sim.contiguity_every, sim.contiguity_threshold);
            self.add_controller(Box::new(c)).map_err(Error::Invariant)?;
        }
        Ok(self)
    }

    /// The simulator of `cfg` with observer `obs`, which sees every access (the general loop,
    /// compiled for `O`).
    pub fn with_observer<O: AccessObserver + 'static>(cfg: &Config, obs: O) -> Result<Simulator, Error> {
        cfg.validate()?;
        if cfg.lite.is_some() {
            crate::config::err(format!("config '{}': [lite] cannot run with an access observer.", cfg.name))?;
        }
        if cfg.mach.is_some() {
            crate::config::err(format!("config '{}': [mach] cannot run with an access observer.", cfg.name))?;
        }
        if let Some(h) = &cfg.hybrid {
            if h.counting == crate::config::Counting::Tlb {
                crate::config::err(format!(
                    "config '{}': hybrid.counting = \"tlb\" is itself the access observer; it cannot run with another.",
                    cfg.name
                ))?;
            }
            return Self::hybrid(cfg, obs)?.with_configured_controllers();
        }
        Self::general(cfg, obs)?.with_configured_controllers()
    }

    fn general<O: AccessObserver + 'static>(cfg: &Config, obs: O) -> Result<Simulator, Error> {
        let handler = match cfg.walker.kind {
            WalkerKind::Radix => AnyHandler::Radix(RadixWalker::new(cfg)),
            WalkerKind::Software => AnyHandler::Software(SoftwareHandler::new(cfg)),
        };
        let backend = crate::mem::backend::from_config(cfg);
        let core = Core::<General<O>>::new(cfg, handler, backend, obs)?;
        Ok(Simulator { engine: Box::new(core), variant: "general" })
    }

    /// The hybrid DRAM/NVM memory's loop (`[hybrid]`): the radix walker and page TLBs only.
    fn hybrid<O: AccessObserver + 'static>(cfg: &Config, obs: O) -> Result<Simulator, Error> {
        let c = &cfg.name;
        if cfg.prism().is_some() || cfg.lite.is_some() {
            crate::config::err(format!("config '{c}': [hybrid] cannot run with [lite] or [prism] yet."))?;
        }
        if cfg.walker.kind != WalkerKind::Radix
            || !cfg.range_tlb.is_empty()
            || cfg.cluster_tlb().is_some()
            || cfg.direct_segment().is_some()
        {
            crate::config::err(format!(
                "config '{c}': [hybrid] needs the radix walker and page TLBs only (no range TLBs, clustered TLB or direct segment)."
            ))?;
        }
        if cfg.hybrid.as_ref().is_some_and(|h| h.migration == crate::config::MigrationPolicy::Rainbow) {
            let mem = crate::mem::rainbow::RainbowMemory::new(cfg);
            let core = Core::<RainbowLoop<O>>::new(cfg, RadixWalker::new(cfg), mem, obs)?;
            return Ok(Simulator { engine: Box::new(core), variant: "rainbow" });
        }
        let mem = crate::mem::hybrid::HybridMemory::new(cfg);
        let core = Core::<HybridLoop<O>>::new(cfg, RadixWalker::new(cfg), mem, obs)?;
        Ok(Simulator { engine: Box::new(core), variant: "hybrid" })
    }

    /// Whether `cfg` runs the plain loop.
    fn is_plain(cfg: &Config) -> bool {
        cfg.walker.kind == WalkerKind::Radix
            && cfg.range_tlb.is_empty()
            && cfg.cluster_tlb().is_none()
            && cfg.direct_segment().is_none()
            && matches!(crate::mem::backend::from_config(cfg), AnyBackend::Dram(_))
    }

    /// Whether `cfg` runs the staged loop: the plain one's walker and memory, with range TLBs or
    /// section 4.8's baselines in the miss path.
    fn is_staged(cfg: &Config) -> bool {
        cfg.walker.kind == WalkerKind::Radix && matches!(crate::mem::backend::from_config(cfg), AnyBackend::Dram(_))
    }

    /// Which compiled copy runs: `plain`, `staged`, `lite`, `prism`, `mach`, `hybrid`,
    /// `rainbow` or `general`.
    pub fn variant(&self) -> &'static str {
        self.variant
    }

    /// The shape the loop was compiled for (`skylake` or `any`).
    pub fn shape(&self) -> &'static str {
        self.engine.shape()
    }

    /// Run the shape-compiled loop if the configuration has a shape (`true`, the default), or
    /// the general-geometry loop (`false`): the results are the same (for tests).
    pub fn set_shaped(&mut self, on: bool) {
        self.engine.set_shaped(on)
    }

    /// Add an epoch controller (before the first batch, or any time: its first epoch ends one
    /// period after the run's start).
    pub fn add_controller(&mut self, c: Box<dyn EpochController>) -> Result<(), String> {
        self.engine.add_controller(c)
    }

    pub fn config(&self) -> &Config {
        self.engine.config()
    }

    /// The OS model (reports, tests).
    pub fn os(&self) -> &Os {
        self.engine.os()
    }

    /// The MMU (reports, tests).
    pub fn mmu(&self) -> &crate::mmu::Mmu {
        self.engine.mmu()
    }

    /// Simulate one batch: accesses in order, side events before the access they precede.
    pub fn batch(&mut self, b: &Batch) -> Result<(), SimError> {
        self.engine.batch(b)
    }

    /// Every counter, flat, named as a tree (`tlb.l2.hits`, `walker.loads.pd.L2`), sorted.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        self.engine.counters()
    }

    /// Derived metrics: MPKI per level, H/M/C, the additive time estimate.
    pub fn derived(&self, c: &BTreeMap<String, u64>) -> BTreeMap<String, f64> {
        self.engine.derived(c)
    }

    /// Check the invariants that hold after every run; returns the first violated one.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.engine.check_invariants()
    }

    /// The result of the run so far.
    pub fn result(&self, trace: &str) -> SimResult {
        self.engine.result(trace)
    }
}

/// Run `src` through a simulator of `cfg`; `on_batch` is called after each batch (progress).
pub fn simulate(
    src: &mut dyn EventSource,
    trace: &str,
    cfg: &Config,
    on_batch: impl FnMut(&dyn EventSource),
) -> Result<SimResult, Error> {
    run(Simulator::new(cfg)?, src, trace, on_batch)
}

/// Run `src` through `sim` to the end and check the invariants.
pub fn run(
    mut sim: Simulator,
    src: &mut dyn EventSource,
    trace: &str,
    mut on_batch: impl FnMut(&dyn EventSource),
) -> Result<SimResult, Error> {
    let mut b = Batch::default();
    while src.next_batch(&mut b)? {
        sim.batch(&b)?;
        on_batch(src);
    }
    sim.check_invariants().map_err(Error::Invariant)?;
    Ok(sim.result(trace))
}

/// Open `trace`, decoding on a thread of its own if `pipeline` (see [`crate::pipeline`]).
pub fn open_source(trace: &str, pipeline: bool) -> Result<Box<dyn EventSource>, Error> {
    let src = xlat_trace::source::open(trace)?;
    Ok(if pipeline { Box::new(crate::pipeline::pipelined(src, 4)) } else { src })
}
