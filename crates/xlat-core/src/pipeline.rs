//! Decoding on its own thread: a trace's batches are read and decompressed by a background
//! thread while the simulator consumes the previous ones, so on two cores a run costs about
//! max(decode, simulate) instead of their sum. Batches are recycled (no allocation per batch).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use xlat_trace::{Batch, EventSource, Footer, Header};

/// An [`EventSource`] whose batches come from a reader thread.
pub struct Pipelined {
    header: Header,
    full: Receiver<xlat_trace::Result<Option<Batch>>>,
    empty: SyncSender<Batch>,
    done: Arc<AtomicU64>,
    total: Option<u64>,
    footer: Arc<Mutex<Option<Footer>>>,
    footer_seen: Option<Footer>,
    thread: Option<JoinHandle<()>>,
    finished: bool,
}

/// Wrap `src` so that it is read `depth` batches ahead on another thread.
pub fn pipelined(mut src: Box<dyn EventSource>, depth: usize) -> Pipelined {
    let header = src.header().clone();
    let (_, total) = src.progress();
    let (full_tx, full) = sync_channel(depth);
    let (empty, empty_rx) = sync_channel::<Batch>(depth + 2);
    for _ in 0..depth + 1 {
        let _ = empty.try_send(Batch::default());
    }
    let done = Arc::new(AtomicU64::new(0));
    let footer = Arc::new(Mutex::new(None));
    let (d, f) = (done.clone(), footer.clone());
    let thread = std::thread::spawn(move || loop {
        let mut b = empty_rx.recv().unwrap_or_default();
        match src.next_batch(&mut b) {
            Ok(true) => {
                d.store(src.progress().0, Ordering::Relaxed);
                if full_tx.send(Ok(Some(b))).is_err() {
                    return;
                }
            }
            Ok(false) => {
                *f.lock().expect("no poisoning") = src.footer().cloned();
                d.store(src.progress().0, Ordering::Relaxed);
                let _ = full_tx.send(Ok(None));
                return;
            }
            Err(e) => {
                let _ = full_tx.send(Err(e));
                return;
            }
        }
    });
    Pipelined { header, full, empty, done, total, footer, footer_seen: None, thread: Some(thread), finished: false }
}

impl EventSource for Pipelined {
    fn header(&self) -> &Header {
        &self.header
    }

    fn next_batch(&mut self, batch: &mut Batch) -> xlat_trace::Result<bool> {
        if self.finished {
            batch.clear();
            return Ok(false);
        }
        match self.full.recv() {
            Ok(Ok(Some(b))) => {
                let old = std::mem::replace(batch, b);
                let _ = self.empty.try_send(old);
                Ok(true)
            }
            Ok(Ok(None)) | Err(_) => {
                self.finished = true;
                self.footer_seen = self.footer.lock().expect("no poisoning").take();
                batch.clear();
                Ok(false)
            }
            Ok(Err(e)) => {
                self.finished = true;
                Err(e)
            }
        }
    }

    fn progress(&self) -> (u64, Option<u64>) {
        (self.done.load(Ordering::Relaxed), self.total)
    }

    fn footer(&self) -> Option<&Footer> {
        self.footer_seen.as_ref()
    }
}

impl Drop for Pipelined {
    fn drop(&mut self) {
        // Unblock the reader (it stops when its channel closes) and wait for it.
        let (tx, _) = sync_channel(0);
        self.empty = tx;
        while self.full.try_recv().is_ok() {}
        let (_, rx) = sync_channel(0);
        let old = std::mem::replace(&mut self.full, rx);
        drop(old);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivers_the_same_batches() {
        let spec = "workload:zipf?size=64MiB&accesses=100000";
        let mut a = xlat_trace::source::open(spec).unwrap();
        let mut p = pipelined(xlat_trace::source::open(spec).unwrap(), 3);
        let (mut x, mut y) = (Batch::default(), Batch::default());
        loop {
            let (ma, mb) = (a.next_batch(&mut x).unwrap(), p.next_batch(&mut y).unwrap());
            assert_eq!(ma, mb);
            if !ma {
                break;
            }
            assert_eq!(x, y);
        }
        // Dropping early must not hang.
        let mut q = pipelined(xlat_trace::source::open(spec).unwrap(), 2);
        q.next_batch(&mut y).unwrap();
        drop(q);
    }
}
