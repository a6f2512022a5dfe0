//! The public face of the simulator (`crate::sim::Simulator`): builds the compiled copy of the
//! loop the plan names, each part from its own section, adds the designs' controllers and walk
//! hooks, and dispatches to the copy once per batch; `simulate` runs a whole trace.

use super::plan::{self as assembly, Copy};
use crate::config::{Config, WalkerKind};
use crate::designs::tlbcount::TlbCounts;
use crate::designs::Observer;
use crate::mem::backend::{AnyBackend, Dram};
use crate::mmu::hook::WalkHook;
use crate::mmu::mach::MachHandler;
use crate::mmu::observer::{AccessObserver, NoObserver};
use crate::mmu::prism::Prism;
use crate::mmu::walker::{AnyHandler, HashedWalker, NestedWalker, RadixWalker, SoftwareHandler};
use crate::os::{Os, SimError};
use crate::sim::engine::{Core, Parts, Variant};
use crate::sim::epoch::EpochController;
use crate::sim::result::SimResult;
use crate::sim::shape;
use std::collections::BTreeMap;
use xlat_trace::{Batch, EventSource, Window};

/// Where the simulation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Trace(#[from] xlat_trace::Error),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The window asked for does not fit the trace (one sentence).
    #[error("{0}")]
    Window(String),
    /// A count that must hold after every run did not: a bug of xlat's, not of the input.
    #[error("simulator invariant violated: {0} (a bug in xlat; please report it with the trace and configuration)")]
    Invariant(String),
}

// The copies of the loop the assembly room's table names (`crate::assembly::Copy`), as the
// engine's parts: handler, backend, observer, staged probe, LRU distances.
type Plain = Parts<RadixWalker, Dram, NoObserver, false, false>;
type Staged = Parts<RadixWalker, Dram, NoObserver, true, false>;
type LruDistances = Parts<RadixWalker, Dram, NoObserver, true, true>;
type PlainPrism = Parts<RadixWalker, Dram, Prism, false, false>;
type HandlerOnly = Parts<MachHandler, Dram, NoObserver, false, false>;
type HybridMemory<O> = Parts<RadixWalker, crate::mem::hybrid::HybridMemory, O, false, false>;
type RainbowMemory<O> = Parts<RadixWalker, crate::mem::rainbow::RainbowMemory, O, false, false>;
type NestedPlain = Parts<NestedWalker, Dram, NoObserver, false, false>;
type HashedPlain = Parts<HashedWalker, Dram, NoObserver, false, false>;
type General<O> = Parts<AnyHandler, AnyBackend, O, true, false>;

/// What the public face needs of a compiled copy (one virtual call per batch).
trait Engine: Send {
    fn batch(&mut self, b: &Batch) -> Result<(), SimError>;
    fn mark_warmup(&mut self);
    fn gauges(&self) -> std::collections::BTreeSet<String>;
    fn counters(&self) -> BTreeMap<String, u64>;
    fn derived(&self, c: &BTreeMap<String, u64>) -> BTreeMap<String, f64>;
    fn check_invariants(&self) -> Result<(), String>;
    fn result(&self, trace: &str) -> SimResult;
    fn config(&self) -> &Config;
    fn os(&self) -> &Os;
    fn add_controller(&mut self, c: Box<dyn EpochController>) -> Result<(), String>;
    fn add_walk_hook(&mut self, h: Box<dyn WalkHook>) -> Result<(), String>;
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
    fn mark_warmup(&mut self) {
        Core::mark_warmup(self)
    }
    fn gauges(&self) -> std::collections::BTreeSet<String> {
        let mut g = crate::stats::GaugeNames::default();
        self.report(&mut g);
        g.0
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
    fn add_walk_hook(&mut self, h: Box<dyn WalkHook>) -> Result<(), String> {
        Core::add_walk_hook(self, h)
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
    /// The window the result reports ([`Simulator::set_window`]).
    window: Window,
    /// Accesses of the warm-up still to simulate (None: counting).
    warm_left: Option<u64>,
    /// Accesses seen, for the sentence of a warm-up longer than the trace.
    seen: u64,
}

impl Simulator {
    fn of(engine: Box<dyn Engine>, variant: &'static str) -> Simulator {
        Simulator { engine, variant, window: Window::default(), warm_left: None, seen: 0 }
    }

    /// Read the trace through `window` (before the first batch): its first `window.warmup`
    /// accesses fed to [`Simulator::batch`] warm the structures and the OS model without being
    /// counted; the result reports the counts after them and the window. (`skip` and `limit`
    /// are the source's: [`open_source`].)
    pub fn set_window(&mut self, window: Window) {
        self.window = window;
        self.warm_left = (window.warmup > 0).then_some(window.warmup);
    }

    /// Why the run cannot give a result for its window: the trace ended inside the warm-up.
    pub fn window_error(&self) -> Option<String> {
        let w = &self.window;
        self.warm_left.map(|_| {
            format!(
                "the warm-up of {} accesses is longer than the trace{} ({} accesses): nothing would be counted; give a shorter warm-up",
                w.warmup,
                if w.skip > 0 { format!(" after --skip {}", w.skip) } else { String::new() },
                self.seen
            )
        })
    }

    /// The simulator of `cfg`: the copy of the loop the assembly room's plan picks for the
    /// claims of its designs (`crate::assembly`), each part built from its own section, and
    /// the designs' epoch controllers.
    pub fn new(cfg: &Config) -> Result<Simulator, Error> {
        // `Config::validate`'s checks in its order, keeping the plan it makes.
        cfg.validate_sections()?;
        let plan = assembly::plan(cfg, false)?;
        // Before anything is allocated: refuse what does not fit in the host's memory.
        crate::config::footprint::check_host_memory(cfg, crate::config::footprint::mem_available())?;
        let sim = match (plan.copy, plan.observer) {
            (Copy::Plain, _) => Self::radix::<Plain>(cfg, Copy::Plain, NoObserver)?,
            (Copy::Staged, _) => Self::radix::<Staged>(cfg, Copy::Staged, NoObserver)?,
            (Copy::Lite, _) => Self::radix::<LruDistances>(cfg, Copy::Lite, NoObserver)?,
            (Copy::Prism, _) => Self::radix::<PlainPrism>(cfg, Copy::Prism, Prism::new(cfg))?,
            (Copy::Mach, _) => {
                let core = Core::<HandlerOnly>::new(cfg, MachHandler::new(cfg), Dram, NoObserver)?;
                Simulator::of(Box::new(core), Copy::Mach.name())
            }
            (Copy::Hybrid | Copy::Rainbow, Observer::TlbCounts) => {
                let h = cfg.hybrid.as_ref().expect("TLB counting is [hybrid]'s");
                Self::hybrid(cfg, plan.copy, TlbCounts::for_hybrid(h, cfg.memory.frames()))?
            }
            (Copy::Hybrid | Copy::Rainbow, _) => Self::hybrid(cfg, plan.copy, NoObserver)?,
            (Copy::Nested, _) => {
                let core = Core::<NestedPlain>::new(cfg, NestedWalker::new(cfg)?, Dram, NoObserver)?;
                Simulator::of(Box::new(core), Copy::Nested.name())
            }
            (Copy::Hashed, _) => {
                let core = Core::<HashedPlain>::new(cfg, HashedWalker::new(cfg), Dram, NoObserver)?;
                Simulator::of(Box::new(core), Copy::Hashed.name())
            }
            (Copy::General, Observer::Prism) => Self::general(cfg, Prism::new(cfg))?,
            (Copy::General, _) => Self::general(cfg, NoObserver)?,
        };
        sim.with_controllers(&plan)
    }

    /// Add the epoch controllers and walk hooks of the plan's designs, in the wing's order.
    fn with_controllers(mut self, plan: &assembly::Plan) -> Result<Simulator, Error> {
        for d in &plan.designs {
            for c in (d.controllers)(self.config()) {
                self.add_controller(c).map_err(Error::Invariant)?;
            }
            for h in (d.walk_hooks)(self.config()) {
                self.engine.add_walk_hook(h).map_err(Error::Invariant)?;
            }
        }
        Ok(self)
    }

    /// The simulator of `cfg` with observer `obs`, which sees every access (the general loop,
    /// or the hybrid memory's, compiled for `O`); a design that claims the observer itself, or
    /// runs a copy of the loop without one, is refused in one sentence.
    pub fn with_observer<O: AccessObserver + 'static>(cfg: &Config, obs: O) -> Result<Simulator, Error> {
        cfg.validate()?;
        let plan = assembly::plan(cfg, true)?;
        let sim = match plan.copy {
            Copy::Hybrid | Copy::Rainbow => Self::hybrid(cfg, plan.copy, obs)?,
            Copy::General => Self::general(cfg, obs)?,
            other => unreachable!("the plan gives an access observer the {} copy", other.name()),
        };
        sim.with_controllers(&plan)
    }

    /// A copy of the loop over the radix walker and one DRAM.
    fn radix<V>(cfg: &Config, copy: Copy, obs: V::Observer) -> Result<Simulator, Error>
    where
        V: Variant<Handler = RadixWalker, Backend = Dram>,
    {
        let core = Core::<V>::new(cfg, RadixWalker::new(cfg), Dram, obs)?;
        Ok(Simulator::of(Box::new(core), copy.name()))
    }

    fn general<O: AccessObserver + 'static>(cfg: &Config, obs: O) -> Result<Simulator, Error> {
        let handler = match cfg.walker.kind {
            WalkerKind::Radix if cfg.virt.is_some() => AnyHandler::Nested(Box::new(NestedWalker::new(cfg)?)),
            WalkerKind::Radix if cfg.hashed_pt.is_some() => AnyHandler::Hashed(Box::new(HashedWalker::new(cfg))),
            WalkerKind::Radix => AnyHandler::Radix(RadixWalker::new(cfg)),
            WalkerKind::Software => AnyHandler::Software(SoftwareHandler::new(cfg)),
        };
        let backend = crate::mem::backend::from_config(cfg);
        let core = Core::<General<O>>::new(cfg, handler, backend, obs)?;
        Ok(Simulator::of(Box::new(core), Copy::General.name()))
    }

    /// The hybrid DRAM/NVM memory's loop (`[hybrid]`), or Rainbow's (`copy`).
    fn hybrid<O: AccessObserver + 'static>(cfg: &Config, copy: Copy, obs: O) -> Result<Simulator, Error> {
        if copy == Copy::Rainbow {
            let mem = crate::mem::rainbow::RainbowMemory::new(cfg);
            let core = Core::<RainbowMemory<O>>::new(cfg, RadixWalker::new(cfg), mem, obs)?;
            return Ok(Simulator::of(Box::new(core), copy.name()));
        }
        let mem = crate::mem::hybrid::HybridMemory::new(cfg);
        let core = Core::<HybridMemory<O>>::new(cfg, RadixWalker::new(cfg), mem, obs)?;
        Ok(Simulator::of(Box::new(core), copy.name()))
    }

    /// Which compiled copy runs: `plain`, `staged`, `lite`, `prism`, `mach`, `hybrid`,
    /// `rainbow`, `nested`, `hashed` or `general`.
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
        self.seen += b.len() as u64;
        match self.warm_left {
            None => self.engine.batch(b),
            Some(left) if (b.len() as u64) < left => {
                self.warm_left = Some(left - b.len() as u64);
                self.engine.batch(b)
            }
            Some(left) => {
                // The warm-up ends in this batch: its accesses up to the end, the mark, the rest
                // (side events placed at the end come after the mark).
                let mut first = b.clone();
                let rest = first.split_off(left as usize);
                self.engine.batch(&first)?;
                self.engine.mark_warmup();
                self.warm_left = None;
                match rest.has_no_events() {
                    true => Ok(()),
                    false => self.engine.batch(&rest),
                }
            }
        }
    }

    /// The counters that are gauges (levels of the state, which a window reports as they are at
    /// its end; the others are counts, reported as their increase over it).
    pub fn gauges(&self) -> std::collections::BTreeSet<String> {
        self.engine.gauges()
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

    /// The outcome at the end of the input: the window's error (the input ended inside the
    /// warm-up), a broken invariant, or the result.
    pub fn finish(&self, trace: &str) -> Result<SimResult, Error> {
        if let Some(e) = self.window_error() {
            return Err(Error::Window(e));
        }
        self.check_invariants().map_err(Error::Invariant)?;
        Ok(self.result(trace))
    }

    /// The result of the run so far.
    pub fn result(&self, trace: &str) -> SimResult {
        let mut r = self.engine.result(trace);
        r.window = (!self.window.is_whole()).then_some(self.window);
        r
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
    sim.finish(trace)
}

/// Open `trace`, decoding on a thread of its own if `pipeline` (see [`crate::pipeline`]).
pub fn open_source(trace: &str, pipeline: bool) -> Result<Box<dyn EventSource>, Error> {
    open_window(trace, pipeline, Window::default())
}

/// Open `trace` seen through `window`'s skip and limit ([`xlat_trace::Windowed`]; the warm-up
/// is the simulator's: [`Simulator::set_window`]).
pub fn open_window(trace: &str, pipeline: bool, window: Window) -> Result<Box<dyn EventSource>, Error> {
    let src = xlat_trace::windowed(xlat_trace::source::open(trace)?, window);
    Ok(if pipeline { Box::new(crate::pipeline::pipelined(src, 4)) } else { src })
}
