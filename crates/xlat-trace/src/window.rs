//! A window of a trace: `skip` accesses passed over, `warmup` accesses that warm the simulated
//! machine without being counted, then at most `limit` accesses counted (drcachesim's
//! `-skip_refs`, `-warmup_refs`, `-sim_refs`; one unit, accesses, for every command).
//!
//! [`Windowed`] applies `skip` and `limit` to any [`EventSource`]: the skipped accesses are
//! dropped but their side events are kept (placed before the first access delivered), so that
//! what the OS model builds from them (mappings, threads, address spaces) is the same as in the
//! whole trace; the source ends after `warmup + limit` accesses, dropping the side events that
//! come after the last one. The warm-up itself is the consumer's: the simulator runs it and
//! counts from its end (`xlat_core::Simulator::set_warmup`).

use crate::error::Result;
use crate::event::{Batch, SideEvent};
use crate::event_source::EventSource;
use crate::format::{Footer, Header};
use serde::Serialize;

/// Which accesses of a trace a command reads and counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Window {
    /// Accesses passed over first (their side events kept).
    pub skip: u64,
    /// Accesses simulated after `skip` but not counted.
    pub warmup: u64,
    /// Accesses counted after the warm-up (`None`: to the end of the trace).
    pub limit: Option<u64>,
}

impl Window {
    /// The whole trace, counted from its first access.
    pub fn is_whole(&self) -> bool {
        *self == Window::default()
    }

    /// The accesses delivered after `skip`: `warmup + limit`, or all.
    fn delivered(&self) -> Option<u64> {
        self.limit.map(|l| self.warmup.saturating_add(l))
    }
}

/// `src` seen through `window` (skip and limit; see the module's documentation).
pub struct Windowed {
    inner: Box<dyn EventSource>,
    window: Window,
    /// Accesses passed over so far.
    skipped: u64,
    /// Accesses delivered so far (after the skip).
    delivered: u64,
    /// Side events of skipped accesses, waiting for the first batch delivered.
    held: Batch,
    /// A batch read past the end of the skip: delivered next.
    pending: Option<Batch>,
    done: bool,
}

impl Windowed {
    pub fn new(inner: Box<dyn EventSource>, window: Window) -> Windowed {
        Windowed { inner, window, skipped: 0, delivered: 0, held: Batch::default(), pending: None, done: false }
    }

    /// Accesses passed over (less than `skip` only if the trace is shorter).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The next batch after the skip (with the skipped part's side events before it), or false.
    fn next_after_skip(&mut self, batch: &mut Batch) -> Result<bool> {
        if let Some(p) = self.pending.take() {
            *batch = p;
            return Ok(true);
        }
        while self.skipped < self.window.skip {
            if !self.inner.next_batch(batch)? {
                // The trace ends inside the skip: its side events are all there is.
                if self.held.side.is_empty() {
                    return Ok(false);
                }
                *batch = std::mem::take(&mut self.held);
                return Ok(true);
            }
            let left = self.window.skip - self.skipped;
            let n = batch.len() as u64;
            if n <= left {
                // All of it skipped: keep its side events only.
                self.skipped += n;
                for s in batch.side.drain(..) {
                    self.held.side.push(SideEvent { pos: 0, ..s });
                }
                continue;
            }
            self.skipped = self.window.skip;
            let rest = batch.split_off(left as usize);
            for s in batch.side.drain(..) {
                self.held.side.push(SideEvent { pos: 0, ..s });
            }
            let mut out = std::mem::take(&mut self.held);
            out.append(&rest);
            *batch = out;
            return Ok(true);
        }
        if !self.held.side.is_empty() {
            // The skip ended exactly at a batch's end: its side events come first, alone.
            *batch = std::mem::take(&mut self.held);
            return Ok(true);
        }
        self.inner.next_batch(batch)
    }
}

impl EventSource for Windowed {
    fn header(&self) -> &Header {
        self.inner.header()
    }

    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        if self.done {
            batch.clear();
            return Ok(false);
        }
        if let Some(max) = self.window.delivered() {
            if self.delivered >= max {
                self.done = true;
                batch.clear();
                return Ok(false);
            }
        }
        if !self.next_after_skip(batch)? {
            self.done = true;
            return Ok(false);
        }
        if let Some(max) = self.window.delivered() {
            let left = max - self.delivered;
            if batch.len() as u64 >= left {
                // The window's last access is in this batch: keep nothing after it.
                let n = left as usize;
                batch.truncate(n);
                batch.side.retain(|s| (s.pos as usize) < n);
            }
        }
        self.delivered += batch.len() as u64;
        Ok(true)
    }

    fn progress(&self) -> (u64, Option<u64>) {
        self.inner.progress()
    }

    /// The trace's end record, when the window reached the trace's end (checked there as always).
    fn footer(&self) -> Option<&Footer> {
        self.inner.footer()
    }

    fn format(&self) -> Option<String> {
        self.inner.format()
    }
}

/// `src` seen through `window`, or `src` itself for the whole trace.
pub fn windowed(src: Box<dyn EventSource>, window: Window) -> Box<dyn EventSource> {
    if window.skip == 0 && window.limit.is_none() {
        src
    } else {
        Box::new(Windowed::new(src, window))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{source, Event};

    /// Every event of `src`, in order.
    fn events(mut src: Box<dyn EventSource>) -> Vec<Event> {
        let mut b = Batch::default();
        let mut out = Vec::new();
        while src.next_batch(&mut b).unwrap() {
            out.extend(b.events());
        }
        out
    }

    /// The reference: events of the whole trace, the skipped accesses dropped, side events kept
    /// up to the last access delivered.
    fn reference(all: &[Event], w: Window) -> Vec<Event> {
        let mut out = Vec::new();
        let (mut seen, mut kept) = (0u64, 0u64);
        let max = w.delivered();
        for e in all {
            match e {
                Event::Access(_) => {
                    seen += 1;
                    if seen <= w.skip {
                        continue;
                    }
                    if max.is_some_and(|m| kept >= m) {
                        break;
                    }
                    kept += 1;
                    out.push(e.clone());
                }
                Event::Side { .. } => {
                    if max.is_some_and(|m| kept >= m) {
                        break;
                    }
                    out.push(e.clone());
                }
            }
        }
        out
    }

    #[test]
    fn windows_keep_the_skipped_side_events_and_stop_at_the_limit() {
        // A workload with side events (mmaps of its threads, context switches) in many batches.
        let spec = "workload:clientserver?servers=3&rounds=400";
        let all = events(source::open(spec).unwrap());
        let n = all.iter().filter(|e| matches!(e, Event::Access(_))).count() as u64;
        assert!(all.iter().any(|e| matches!(e, Event::Side { .. })) && n > 40_000, "{n}");
        for w in [
            Window { skip: 0, warmup: 0, limit: Some(1) },
            Window { skip: 1, warmup: 0, limit: None },
            Window { skip: 16_384, warmup: 0, limit: Some(16_384) },
            Window { skip: 20_000, warmup: 5_000, limit: Some(7_777) },
            Window { skip: n - 3, warmup: 0, limit: Some(10) },
            Window { skip: n, warmup: 0, limit: None },
            Window { skip: n + 5, warmup: 0, limit: Some(4) },
            Window { skip: 0, warmup: 100, limit: Some(0) },
        ] {
            let got = events(windowed(source::open(spec).unwrap(), w));
            assert_eq!(got, reference(&all, w), "{w:?}");
        }
    }

    #[test]
    fn split_off_keeps_every_event_in_order() {
        let mut src = source::open("workload:clientserver?servers=2&rounds=50").unwrap();
        let mut b = Batch::default();
        while src.next_batch(&mut b).unwrap() {
            if b.side.is_empty() {
                continue;
            }
            for at in [0, 1, b.side[0].pos as usize, b.len() / 2, b.len()] {
                let mut a = b.clone();
                let rest = a.split_off(at);
                assert_eq!(a.len(), at.min(b.len()));
                let mut joined = a.clone();
                joined.append(&rest);
                assert_eq!(joined, b);
            }
        }
    }
}
