//! Instructions as the simulator counts them (`sim::engine`'s `set_icount`), for the analyses
//! that keep their own epochs: per thread from its first access (which counts one), all threads
//! summed; a thread's count that goes back adds nothing.

use rustc_hash::FxHashMap;

const NO_THREAD: u64 = u64::MAX;

#[derive(Debug, Clone)]
pub(crate) struct InstrClock {
    /// Instructions so far, all threads summed.
    pub(crate) instructions: u64,
    cur_tid: u64,
    cur_ic: u64,
    /// Other threads: the instruction count of their last access.
    threads: FxHashMap<u32, u64>,
}

impl InstrClock {
    pub(crate) fn new() -> InstrClock {
        InstrClock { instructions: 0, cur_tid: NO_THREAD, cur_ic: 0, threads: FxHashMap::default() }
    }

    /// An access of thread `tid` at its instruction count `ic`.
    #[inline(always)]
    pub(crate) fn advance(&mut self, tid: u32, ic: u64) {
        if tid as u64 != self.cur_tid {
            self.switch_thread(tid, ic);
        } else if ic > self.cur_ic {
            self.instructions += ic - self.cur_ic;
            self.cur_ic = ic;
        }
    }

    #[cold]
    fn switch_thread(&mut self, tid: u32, ic: u64) {
        if self.cur_tid != NO_THREAD {
            self.threads.insert(self.cur_tid as u32, self.cur_ic);
        }
        match self.threads.get(&tid) {
            Some(&last) if ic > last => {
                self.instructions += ic - last;
                self.cur_ic = ic;
            }
            Some(&last) => self.cur_ic = last,
            // A thread's first access counts one instruction.
            None => {
                self.instructions += 1;
                self.cur_ic = ic;
            }
        }
        self.cur_tid = tid as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::InstrClock;

    #[test]
    fn counts_as_the_simulator_does() {
        let mut c = InstrClock::new();
        c.advance(1, 10); // first access of thread 1: 1
        c.advance(1, 15); // +5
        c.advance(2, 100); // first access of thread 2: +1
        c.advance(1, 17); // +2 (from 15)
        c.advance(1, 16); // back: +0
        c.advance(2, 103); // +3 (from 100)
        assert_eq!(c.instructions, 12);
    }
}
