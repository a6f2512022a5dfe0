//! Epochs: code that runs every N instructions or accesses, between two accesses, with mutable
//! access to the MMU's structures, the caches and the OS model (Lite's way-disabling
//! controller resizing TLB ways, Rainbow's hot-page migration, PRISM's fidelity epochs), each
//! with its own counters and a time series of them (one row per epoch). The time-series
//! sampling of every counter (`sim.interval_accesses`, `sim.interval_instructions`) is
//! scheduled the same way. Nothing runs per access: the loop's ranges end where an epoch does.

use crate::mem::Caches;
use crate::mmu::Mmu;
use crate::os::{Invalidation, Os, SimError};
use crate::stats::{Counters, Names, Sink, Values};
use xlat_trace::SideBody;

/// How often something runs: every this many accesses or instructions (counted as the
/// `accesses` and `instructions` counters count them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Accesses(u64),
    Instructions(u64),
}

/// What an epoch controller may act on.
pub struct EpochCx<'a> {
    /// The epoch that just ended (1 for the first).
    pub epoch: u64,
    pub accesses: u64,
    pub instructions: u64,
    /// The miss handler's cycles so far (the walk cycles of the time estimate).
    pub walk_cycles: u64,
    pub mmu: &'a mut Mmu,
    pub caches: &'a mut Caches,
    pub os: &'a mut Os,
    /// Invalidations an OS operation asked for (the simulator performs them after the run).
    pub inval: &'a mut Vec<Invalidation>,
    /// The memory backend and the access observer of the compiled loop, for a controller that
    /// works with its own (the hybrid memory's migration: `downcast_mut`).
    pub backend: &'a mut dyn std::any::Any,
    pub observer: &'a mut dyn std::any::Any,
}

/// A controller run at the end of every epoch.
pub trait EpochController: Counters + Send {
    /// Names its counters and time series (`epoch.<name>.<counter>`).
    fn name(&self) -> &str;
    fn period(&self) -> Period;
    fn run(&mut self, cx: &mut EpochCx<'_>) -> Result<(), SimError>;
    /// A side event (IPC, context switch, phase) happened.
    fn side(&mut self, _body: &SideBody) {}
    /// A syscall asked for invalidations (`cx.inval`, not yet performed): it unmapped, moved or
    /// changed the mappings of those ranges. Runs at once, before the next access, for a
    /// controller whose state names pages (Rainbow's DRAM copies); `cx.epoch` is the last epoch
    /// that ended.
    fn invalidating(&mut self, _cx: &mut EpochCx<'_>) -> Result<(), SimError> {
        Ok(())
    }
}

pub(crate) struct Slot {
    pub(crate) c: Box<dyn EpochController>,
    every: Period,
    /// The count (of its unit) at which it runs next.
    next: u64,
    pub(crate) epochs: u64,
    /// Its counters after each run.
    pub(crate) columns: Vec<String>,
    pub(crate) rows: Vec<Vec<u64>>,
}

/// The schedule: the counter sampling and the controllers.
#[derive(Default)]
pub(crate) struct Epochs {
    /// Sampling of every counter: its period and next sample point.
    pub(crate) sample: Option<(Period, u64)>,
    pub(crate) slots: Vec<Slot>,
}

fn every(p: Period) -> u64 {
    match p {
        Period::Accesses(n) | Period::Instructions(n) => n,
    }
}

impl Epochs {
    pub(crate) fn new(interval_accesses: u64, interval_instructions: u64) -> Epochs {
        let sample = if interval_accesses > 0 {
            Some((Period::Accesses(interval_accesses), interval_accesses))
        } else if interval_instructions > 0 {
            Some((Period::Instructions(interval_instructions), interval_instructions))
        } else {
            None
        };
        Epochs { sample, slots: Vec::new() }
    }

    pub(crate) fn add(&mut self, c: Box<dyn EpochController>) -> Result<(), String> {
        let every = c.period();
        if self::every(every) == 0 {
            return Err(format!("epoch controller '{}' has a period of 0", c.name()));
        }
        if self.slots.iter().any(|s| s.c.name() == c.name()) {
            return Err(format!("two epoch controllers are named '{}'", c.name()));
        }
        let mut names = Names::default();
        c.counters(&mut names);
        self.slots.push(Slot { every, next: self::every(every), epochs: 0, columns: names.0, rows: Vec::new(), c });
        Ok(())
    }

    /// The next stop counted in accesses, or instructions (`u64::MAX`: none).
    pub(crate) fn next_stop(&self, instructions: bool) -> u64 {
        let is = |p: Period| matches!(p, Period::Instructions(_)) == instructions;
        let s = self.sample.filter(|s| is(s.0)).map_or(u64::MAX, |s| s.1);
        self.slots.iter().filter(|c| is(c.every)).map(|c| c.next).fold(s, u64::min)
    }

    /// Whether the sample is due at these counts; moves the next sample point past them.
    pub(crate) fn sample_due(&mut self, accesses: u64, instructions: u64) -> bool {
        match &mut self.sample {
            Some((Period::Accesses(n), next)) if accesses >= *next => {
                *next += *n;
                true
            }
            Some((Period::Instructions(n), next)) if instructions >= *next => {
                while *next <= instructions {
                    *next += *n;
                }
                true
            }
            _ => false,
        }
    }

    /// Controller `i`'s epochs that end at or before these counts: how many to run now (a
    /// thread's instruction count can jump past several boundaries at once; each ran once).
    pub(crate) fn due(&mut self, i: usize, accesses: u64, instructions: u64) -> u64 {
        let s = &mut self.slots[i];
        let (now, n) = match s.every {
            Period::Accesses(n) => (accesses, n),
            Period::Instructions(n) => (instructions, n),
        };
        let mut k = 0;
        while s.next <= now {
            s.next += n;
            k += 1;
        }
        k
    }

    /// Record controller `i`'s counters as a row of its time series.
    pub(crate) fn record(&mut self, i: usize) {
        let s = &mut self.slots[i];
        let mut v = Values::default();
        s.c.counters(&mut v);
        s.rows.push(v.0);
    }
}

/// Report the controllers' counters as `epoch.<name>.<counter>`.
pub(crate) fn report(slots: &[Slot], out: &mut dyn Sink) {
    for s in slots {
        let prefix = format!("epoch.{}", s.c.name());
        let mut p = crate::stats::Prefixed { prefix: &prefix, inner: out };
        p.put(format_args!("runs"), s.epochs);
        s.c.counters(&mut p);
    }
}
