//! The xlat QEMU plugin (`native/qemu-trace`): its raw record stream and the recorder that runs a
//! program under `qemu-x86_64` with the plugin and writes one xlat trace per traced process.
//!
//! Raw stream (all little-endian; `docs/tracing.md` has the full description):
//! a 32-byte hello (`"XLATQRW1"`, version u32, flags u32, pid u32, ppid u32, skip u64), then
//! chunks: a 16-byte head (`"CHNK"`, tid u32, record count u32, reserved u32) and that many
//! 16-byte records `(addr u64, meta u64)`, `meta = icount << 8 | (size - 1) << 2 | kind`. Kind 3
//! is a syscall: `addr` holds the xlat [`SyscallKind`] and the next four records hold the six
//! arguments, the result and a zero word.

use crate::error::{Error, Result};
use crate::event::{Access, AccessKind, Batch, SideBody, Syscall, SyscallKind};
use crate::event_source::{EventSource, IMPORT_BATCH};
use crate::format::Header;
use crate::input::read_full;
use crate::writer::TraceWriter;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const STREAM_MAGIC: &[u8; 8] = b"XLATQRW1";
pub const STREAM_VERSION: u32 = 1;
const CHUNK_MAGIC: u32 = u32::from_le_bytes(*b"CHNK");
const HELLO_LEN: usize = 32;
const CHUNK_HEAD_LEN: usize = 16;
const REC: usize = 16;
const SIDE_SLOTS: usize = 4;
/// The plugin writes at most 65536 records per chunk; anything far larger is corruption.
const MAX_CHUNK_RECORDS: u32 = 1 << 22;
/// Hello flag: instruction fetches are recorded.
pub const FLAG_IFETCH: u32 = 1;

/// The first record of a stream: who is writing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    pub version: u32,
    pub flags: u32,
    pub pid: u32,
    pub ppid: u32,
    pub skip: u64,
}

/// Per-thread instruction-count repair: a thread id the kernel reuses for a new thread starts
/// counting from zero again; shifting it keeps counts non-decreasing per id, as the format needs.
#[derive(Clone, Copy)]
struct ThreadFix {
    tid: u32,
    last: u64,
    shift: u64,
}

/// Decodes a raw stream into batches.
pub struct RawStream<R: Read> {
    r: R,
    name: String,
    hello: Hello,
    /// Byte offset of the next unread byte.
    offset: u64,
    /// A stream that ends inside a chunk is accepted as cut short (the recorder's case: the
    /// program was killed) instead of being an error.
    lenient_end: bool,
    truncated: bool,
    done: bool,
    chunk: Vec<u8>,
    fixes: Vec<ThreadFix>,
    /// Accesses per batch to aim for.
    batch_target: usize,
}

impl<R: Read> RawStream<R> {
    /// Read the hello record. `name` appears in error messages.
    pub fn new(mut r: R, name: &str, lenient_end: bool) -> Result<Self> {
        let mut h = [0u8; HELLO_LEN];
        let n = read_full(&mut r, &mut h).map_err(|e| Error::io(name, e))?;
        if n == 0 {
            return Err(Error::Empty(name.to_string()));
        }
        if n < HELLO_LEN || &h[..8] != STREAM_MAGIC {
            return Err(Error::Corrupt {
                what: name.to_string(),
                offset: 0,
                detail: "it does not start with the xlat QEMU plugin's stream header (XLATQRW1)".into(),
            });
        }
        let u32at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap());
        let hello = Hello {
            version: u32at(8),
            flags: u32at(12),
            pid: u32at(16),
            ppid: u32at(20),
            skip: u64::from_le_bytes(h[24..32].try_into().unwrap()),
        };
        if hello.version != STREAM_VERSION {
            return Err(Error::Corrupt {
                what: name.to_string(),
                offset: 8,
                detail: format!(
                    "stream version {} is not the version {STREAM_VERSION} this xlat reads (rebuild the plugin)",
                    hello.version
                ),
            });
        }
        Ok(RawStream {
            r,
            name: name.to_string(),
            hello,
            offset: HELLO_LEN as u64,
            lenient_end,
            truncated: false,
            done: false,
            chunk: Vec::new(),
            fixes: Vec::new(),
            batch_target: IMPORT_BATCH,
        })
    }

    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// Aim for `n` accesses per batch (default [`IMPORT_BATCH`]); a batch may exceed it by one chunk.
    pub fn set_batch_target(&mut self, n: usize) {
        self.batch_target = n.max(1);
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Whether the stream ended inside a chunk (only with `lenient_end`).
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    fn corrupt(&self, offset: u64, detail: String) -> Error {
        Error::Corrupt { what: self.name.clone(), offset, detail }
    }

    fn cut_short(&mut self, at: u64, what: &str) -> Result<bool> {
        self.done = true;
        if self.lenient_end {
            self.truncated = true;
            return Ok(false);
        }
        Err(self.corrupt(at, format!("the stream ends inside {what}")))
    }

    /// Read the next chunk into `self.chunk`; returns its thread id, or `None` at the end.
    fn next_chunk(&mut self) -> Result<Option<u32>> {
        let at = self.offset;
        let mut head = [0u8; CHUNK_HEAD_LEN];
        let n = read_full(&mut self.r, &mut head).map_err(|e| Error::io(&self.name, e))?;
        self.offset += n as u64;
        if n == 0 {
            self.done = true;
            return Ok(None);
        }
        if n < CHUNK_HEAD_LEN {
            self.cut_short(at, "a chunk header")?;
            return Ok(None);
        }
        let magic = u32::from_le_bytes(head[0..4].try_into().unwrap());
        let tid = u32::from_le_bytes(head[4..8].try_into().unwrap());
        let nrec = u32::from_le_bytes(head[8..12].try_into().unwrap());
        if magic != CHUNK_MAGIC {
            return Err(self.corrupt(at, format!("expected a chunk header (CHNK), found {magic:#010x}")));
        }
        if nrec == 0 || nrec > MAX_CHUNK_RECORDS {
            return Err(self.corrupt(at + 8, format!("implausible chunk record count {nrec}")));
        }
        let len = nrec as usize * REC;
        self.chunk.resize(len, 0);
        let n = read_full(&mut self.r, &mut self.chunk).map_err(|e| Error::io(&self.name, e))?;
        self.offset += n as u64;
        if n < len {
            self.cut_short(at, "a chunk")?;
            return Ok(None);
        }
        Ok(Some(tid))
    }

    fn decode_chunk(&mut self, tid: u32, batch: &mut Batch) -> Result<()> {
        let base = self.offset - self.chunk.len() as u64;
        let fi = match self.fixes.iter().position(|f| f.tid == tid) {
            Some(i) => i,
            None => {
                self.fixes.push(ThreadFix { tid, last: 0, shift: 0 });
                self.fixes.len() - 1
            }
        };
        let mut fix = self.fixes[fi];
        let word = |c: &[u8], i: usize| u64::from_le_bytes(c[i..i + 8].try_into().unwrap());
        let nrec = self.chunk.len() / REC;
        // Fast path, nearly every chunk: accesses only, counts in order. One pass into reserved
        // columns; on a syscall record or a count going backwards, undo and take the slow path.
        let start = batch.addr.len();
        batch.addr.reserve(nrec);
        batch.icount.reserve(nrec);
        batch.tid.reserve(nrec);
        batch.size.reserve(nrec);
        batch.kind.reserve(nrec);
        let mut last = fix.last;
        let mut fast = true;
        for r in self.chunk.chunks_exact(REC) {
            let meta = word(r, 8);
            let icount = (meta >> 8) + fix.shift;
            if meta & 3 == 3 || icount < last {
                fast = false;
                break;
            }
            last = icount;
            batch.addr.push(word(r, 0));
            batch.icount.push(icount);
            batch.tid.push(tid);
            batch.size.push(((meta >> 2) & 63) as u16 + 1);
            batch.kind.push((meta & 3) as u8);
        }
        if fast {
            fix.last = last;
            self.fixes[fi] = fix;
            return Ok(());
        }
        batch.addr.truncate(start);
        batch.icount.truncate(start);
        batch.tid.truncate(start);
        batch.size.truncate(start);
        batch.kind.truncate(start);
        let mut i = 0;
        while i < nrec {
            let at = i * REC;
            let addr = word(&self.chunk, at);
            let meta = word(&self.chunk, at + 8);
            let mut icount = (meta >> 8) + fix.shift;
            if icount < fix.last {
                fix.shift += fix.last - icount;
                icount = fix.last;
            }
            fix.last = icount;
            let kind = (meta & 3) as u8;
            if kind == 3 {
                if i + SIDE_SLOTS >= nrec {
                    return Err(
                        self.corrupt(base + at as u64, "a syscall record is cut off by the end of its chunk".into())
                    );
                }
                let sk = SyscallKind::from_u8(addr as u8)
                    .filter(|_| addr < 256)
                    .ok_or_else(|| self.corrupt(base + at as u64, format!("unknown syscall kind {addr}")))?;
                let mut args = [0u64; 6];
                for (k, a) in args.iter_mut().enumerate() {
                    *a = word(&self.chunk, at + REC + 8 * k);
                }
                let ret = word(&self.chunk, at + REC + 48) as i64;
                batch.push_side(tid, icount, SideBody::Syscall(Syscall { kind: sk, args, ret }));
                i += 1 + SIDE_SLOTS;
                continue;
            }
            batch.push_access(Access {
                addr,
                icount,
                tid,
                size: ((meta >> 2) & 63) as u16 + 1,
                kind: AccessKind::from_u8(kind).expect("kind < 3"),
            });
            i += 1;
        }
        self.fixes[fi] = fix;
        Ok(())
    }

    /// Clear `batch` and fill it with the next chunks (about the batch target in accesses);
    /// `false` at the end.
    pub fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        batch.clear();
        while !self.done && batch.len() < self.batch_target {
            match self.next_chunk()? {
                Some(tid) => self.decode_chunk(tid, batch)?,
                None => break,
            }
        }
        Ok(!batch.has_no_events() || !self.done)
    }
}

/// A raw stream saved to a file (`qemu-raw:PATH`; the plugin's `out=PATH` mode).
pub struct RawSource {
    stream: RawStream<BufReader<File>>,
    header: Header,
    len: u64,
}

impl RawSource {
    pub fn open(path: &str) -> Result<RawSource> {
        let f = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let stream = RawStream::new(BufReader::with_capacity(64 << 10, f), path, false)?;
        let mut header = Header::new(format!("xlat {} qemu-raw import", env!("CARGO_PKG_VERSION")));
        header.page_size_hint = 4096;
        header.threads = vec![stream.hello.pid];
        header.metadata.insert("pid".into(), stream.hello.pid.into());
        header.metadata.insert("ppid".into(), stream.hello.ppid.into());
        header.metadata.insert("skip_instructions".into(), stream.hello.skip.into());
        Ok(RawSource { stream, header, len })
    }
}

impl EventSource for RawSource {
    fn header(&self) -> &Header {
        &self.header
    }
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        self.stream.next_batch(batch)
    }
    fn progress(&self) -> (u64, Option<u64>) {
        (self.stream.offset(), Some(self.len))
    }
}

// ----------------------------------------------------------------------------------------------
// The recorder.

/// What to run and where to write it.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The `qemu-x86_64` binary.
    pub qemu: PathBuf,
    /// The plugin `.so`.
    pub plugin: PathBuf,
    /// The program (already resolved to a path) followed by its arguments.
    pub program: Vec<String>,
    /// `argv[0]` the program sees (e.g. the name the user typed).
    pub argv0: Option<String>,
    /// Extra options for QEMU, placed before `-plugin`.
    pub qemu_args: Vec<String>,
    /// Trace of the first process; a forked child's goes to [`child_trace_path`].
    pub out: PathBuf,
    /// Instructions of each process's first thread to run before accesses are recorded.
    pub skip: u64,
    /// Stop after this many accesses in the first process's trace (and cap each child's).
    pub max: Option<u64>,
    pub ifetch: bool,
    /// zstd level.
    pub level: i32,
    /// Header template: producer, command and metadata (pid, ppid are added per process).
    pub header: Header,
}

/// One written trace.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProcessTrace {
    pub pid: u32,
    pub ppid: u32,
    pub path: PathBuf,
    pub accesses: u64,
    pub side_events: u64,
    pub threads: usize,
    pub bytes: u64,
    /// The stream stopped inside a chunk (the process was killed).
    pub truncated: bool,
    /// Recording stopped at `max`.
    pub hit_max: bool,
    /// The trace holds the process's `exit`/`exit_group`. Without it (and without `hit_max`) the
    /// process was killed or replaced itself with another program (`execve`), which QEMU user
    /// mode runs natively, untraced.
    pub exited: bool,
}

/// The outcome of [`record`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct RecordSummary {
    /// The program's exit status (128 + signal number when a signal ended it).
    pub status: i32,
    /// The recorder stopped the program because the first process reached `max`.
    pub stopped_at_max: bool,
    /// The user interrupted the recording.
    pub interrupted: bool,
    /// The first process's trace first, then children in the order they connected.
    pub processes: Vec<ProcessTrace>,
    pub seconds: f64,
}

/// Running totals passed to the progress callback.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecordProgress {
    pub accesses: u64,
    pub bytes: u64,
    pub processes: u64,
    pub seconds: f64,
}

pub use super::qemu_paths::child_trace_path;

struct Shared {
    accesses: AtomicU64,
    bytes: AtomicU64,
    processes: AtomicU64,
    root_hit_max: AtomicBool,
    failed: AtomicBool,
    paths: super::qemu_paths::Paths,
}

/// Kills the process group on every early return, so no traced program outlives the recorder.
struct Guard {
    child: Child,
    pgid: i32,
    dir: PathBuf,
    reaped: bool,
    /// Kills the process group (and removes `dir`) if this process dies first ([`watchdog`]).
    watchdog: Option<Child>,
}

impl Guard {
    fn kill(&mut self) {
        // SAFETY: kill(2) with a negative pid signals our own child's process group.
        unsafe {
            libc::kill(-self.pgid, libc::SIGKILL);
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = self.child.wait();
        }
        if let Some(w) = &mut self.watchdog {
            let _ = w.kill();
            let _ = w.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A process that outlives this one only to clean up after it, the leader of the process group
/// QEMU then joins: when the thread that starts it ends, however it ends (SIGKILL or SIGTERM of
/// the recorder included, when no destructor runs), the kernel sends it SIGTERM
/// (`PR_SET_PDEATHSIG`), and it removes the socket's directory and kills its process group:
/// QEMU, the traced program and the children it forked, and itself. Started before QEMU, so
/// that no moment leaves QEMU without it. `None` when it cannot be started (the recording goes
/// on, QEMU in a group of its own; only this safety net is missing).
fn watchdog(dir: &Path) -> Option<Child> {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as i32;
    let script = "trap 'rm -rf \"$XLAT_WATCHDOG_DIR\"; kill -KILL 0' TERM; while :; do sleep 1 & wait $!; done";
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(script).env("XLAT_WATCHDOG_DIR", dir);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    cmd.process_group(0);
    // SAFETY: prctl, getppid and _exit are async-signal-safe; nothing else runs between fork
    // and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            // The recorder died before the request took effect: nothing to watch.
            if libc::getppid() != parent {
                libc::_exit(0);
            }
            Ok(())
        });
    }
    cmd.spawn().ok()
}

/// Run `opts.program` under QEMU with the plugin and write its traces, streaming. `progress` is
/// called about ten times a second; returning `false` stops the program (an interrupt).
pub fn record(opts: &RecordOptions, mut progress: impl FnMut(&RecordProgress) -> bool) -> Result<RecordSummary> {
    let start = Instant::now();
    let dir = std::env::temp_dir().join(format!(
        "xlat-trace-{}-{}",
        std::process::id(),
        start.elapsed().as_nanos()
            ^ (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0))
    ));
    std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, e))?;
    let sock = dir.join("stream.sock");
    let listener = match UnixListener::bind(&sock) {
        Ok(l) => l,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(Error::io(&sock, e));
        }
    };
    listener.set_nonblocking(true).map_err(|e| Error::io(&sock, e))?;

    let mut cmd = Command::new(&opts.qemu);
    cmd.args(&opts.qemu_args);
    if let Some(a0) = &opts.argv0 {
        cmd.arg("-0").arg(a0);
    }
    // QEMU's option syntax splits on commas; a literal comma is written twice.
    let esc = |p: &Path| p.display().to_string().replace(',', ",,");
    cmd.arg("-plugin").arg(format!(
        "{},sock={},skip={},ifetch={}",
        esc(&opts.plugin),
        esc(&sock),
        opts.skip,
        if opts.ifetch { "on" } else { "off" }
    ));
    cmd.arg("--").args(&opts.program);
    // For the exec wrapper (native/qemu-trace/xlat_exec_shim.c, configured by XLAT_EXEC_SHIM):
    // exec'd programs run under QEMU again and connect here. Only then: the guest's environment
    // (and with it its startup's accesses) stays as it was.
    if std::env::var_os("XLAT_EXEC_SHIM").is_some() {
        cmd.env("XLAT_TRACE_SOCK", &sock);
    }
    // A process group of its own (the watchdog's), so that stopping at --max also stops forked
    // children, and the recorder's death stops them all.
    let watchdog = watchdog(&dir);
    let group = watchdog.as_ref().map_or(0, |w| w.id() as i32);
    std::os::unix::process::CommandExt::process_group(&mut cmd, group);
    let child = cmd.spawn().map_err(|e| {
        let _ = std::fs::remove_dir_all(&dir);
        Error::Import(format!("cannot run {}: {e}", opts.qemu.display()))
    })?;
    let root_pid = child.id();
    let pgid = if group != 0 { group } else { root_pid as i32 };
    let mut guard = Guard { pgid, child, dir: dir.clone(), reaped: false, watchdog };

    let shared = Arc::new(Shared {
        accesses: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        processes: AtomicU64::new(0),
        root_hit_max: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        paths: Default::default(),
    });
    let mut handlers = Vec::new();
    let mut status: Option<std::process::ExitStatus> = None;
    let mut stopped_at_max = false;
    let mut interrupted = false;
    let mut idle_polls = 0;
    loop {
        let mut accepted = false;
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    accepted = true;
                    let opts = opts.clone();
                    let shared = shared.clone();
                    handlers.push(std::thread::spawn(move || {
                        let r = serve(stream, &opts, root_pid, &shared);
                        if r.is_err() {
                            shared.failed.store(true, Ordering::SeqCst);
                        }
                        r
                    }));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(&sock, e)),
            }
        }
        if status.is_none() {
            status = guard.child.try_wait().map_err(Error::RawIo)?;
        }
        if status.is_none() && !stopped_at_max && shared.root_hit_max.load(Ordering::SeqCst) {
            stopped_at_max = true;
            guard.kill();
        }
        if shared.failed.load(Ordering::SeqCst) {
            guard.kill();
        }
        let p = RecordProgress {
            accesses: shared.accesses.load(Ordering::Relaxed),
            bytes: shared.bytes.load(Ordering::Relaxed),
            processes: shared.processes.load(Ordering::Relaxed),
            seconds: start.elapsed().as_secs_f64(),
        };
        if !interrupted && !progress(&p) {
            interrupted = true;
            guard.kill();
        }
        if status.is_some() && handlers.iter().all(|h| h.is_finished()) {
            // A child forked just before the end may still be connecting: give it a moment.
            idle_polls += 1;
            if !accepted && idle_polls > 2 {
                break;
            }
        } else {
            idle_polls = 0;
        }
        std::thread::sleep(Duration::from_millis(if status.is_some() { 20 } else { 50 }));
    }
    guard.reaped = true;
    drop(listener);
    let mut processes = Vec::new();
    let mut first_err = None;
    for h in handlers {
        match h.join() {
            Ok(Ok(p)) => processes.push(p),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(Error::Import("a recorder thread panicked".into()));
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    processes.sort_by_key(|p| p.path != opts.out);
    let st = status.expect("loop ends after the program exited");
    let code = st.code().unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(&st).unwrap_or(0));
    Ok(RecordSummary { status: code, stopped_at_max, interrupted, processes, seconds: start.elapsed().as_secs_f64() })
}

/// Turn one process's stream into its trace file (written as `PATH.partial`, renamed at the end).
fn serve(stream: UnixStream, opts: &RecordOptions, root_pid: u32, shared: &Shared) -> Result<ProcessTrace> {
    let name = "the QEMU plugin stream";
    // A small buffer: chunk reads (up to 1 MiB) bypass it and land in place.
    let mut raw = RawStream::new(BufReader::with_capacity(64 << 10, stream), name, true)?;
    // Whole 1M-access blocks compress better than one block per 64K-access batch.
    raw.set_batch_target(crate::format::MAX_BLOCK_ACCESSES - (1 << 16));
    let hello = *raw.hello();
    let path = shared.paths.take(&opts.out, hello.pid, hello.pid == root_pid);
    let root = path == opts.out;
    let mut header = opts.header.clone();
    header.threads = vec![hello.pid];
    header.metadata.insert("pid".into(), hello.pid.into());
    header.metadata.insert("ppid".into(), hello.ppid.into());
    if !root {
        header.metadata.insert("forked_child".into(), true.into());
    }
    // What this process runs: `qemu ... -- PATH ARGS` (an exec'd program, see xlat_exec_shim.c).
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", hello.pid)).unwrap_or_default();
    let args: Vec<String> = cmdline.split(|&b| b == 0).map(|s| String::from_utf8_lossy(s).into_owned()).collect();
    if let Some(i) = args.iter().position(|a| a == "--") {
        let run: Vec<String> = args[i + 1..].iter().filter(|a| !a.is_empty()).cloned().collect();
        header.metadata.insert("argv_run".into(), run.into());
    }
    let tmp = PathBuf::from(format!("{}.partial", path.display()));
    let file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    shared.processes.fetch_add(1, Ordering::Relaxed);
    let result = (|| -> Result<ProcessTrace> {
        let io = |e: Error| match e {
            Error::RawIo(e) => Error::io(&path, e),
            e => e,
        };
        let mut w =
            TraceWriter::with_level(BufWriter::with_capacity(1 << 20, file), &header, opts.level).map_err(io)?;
        // Decoding runs on its own thread, one batch ahead of encoding and compression, so the
        // recorder can use a second core; batches travel back for reuse (bounded memory: three
        // batches of at most 1M accesses).
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Batch>(1);
        let (empty_tx, empty_rx) = std::sync::mpsc::sync_channel::<Batch>(3);
        for _ in 0..2 {
            let _ = empty_tx.send(Batch::with_capacity(crate::format::MAX_BLOCK_ACCESSES));
        }
        let decoder = std::thread::spawn(move || -> Result<bool> {
            loop {
                let mut b = empty_rx.recv().unwrap_or_default();
                if !raw.next_batch(&mut b)? {
                    return Ok(raw.truncated());
                }
                if full_tx.send(b).is_err() {
                    // The writer stopped (--max): dropping the stream stops the plugin.
                    return Ok(raw.truncated());
                }
            }
        });
        let mut n = 0u64;
        let mut hit_max = false;
        let mut exited = false;
        let mut last_bytes = w.bytes_written();
        let mut write_err = None;
        while let Ok(mut b) = full_rx.recv() {
            if let Some(max) = opts.max {
                if n + b.len() as u64 >= max {
                    b.truncate((max - n) as usize);
                    hit_max = true;
                }
            }
            if let Err(e) = w.write_batch(&b) {
                write_err = Some(io(e));
                break;
            }
            exited |= b.side.iter().any(|s| matches!(&s.body, SideBody::Syscall(c) if c.kind == SyscallKind::Exit));
            n += b.len() as u64;
            shared.accesses.fetch_add(b.len() as u64, Ordering::Relaxed);
            let bytes = w.bytes_written();
            shared.bytes.fetch_add(bytes - last_bytes, Ordering::Relaxed);
            last_bytes = bytes;
            if hit_max {
                if root {
                    shared.root_hit_max.store(true, Ordering::SeqCst);
                }
                break;
            }
            let _ = empty_tx.send(b);
        }
        drop(full_rx);
        drop(empty_tx);
        if write_err.is_some() {
            // Have the main loop stop the program now: the decoder may be waiting on its stream.
            shared.failed.store(true, Ordering::SeqCst);
        }
        let truncated = decoder.join().map_err(|_| Error::Import("the stream decoder panicked".into()))?;
        if let Some(e) = write_err {
            return Err(e);
        }
        let truncated = truncated?;
        let (mut f, footer) = w.finish().map_err(io)?;
        f.flush().map_err(|e| Error::io(&path, e))?;
        Ok(ProcessTrace {
            pid: hello.pid,
            ppid: hello.ppid,
            path: path.clone(),
            accesses: footer.accesses,
            side_events: footer.side_events,
            threads: footer.threads.len(),
            bytes: 0,
            truncated,
            hit_max,
            exited,
        })
    })();
    match result {
        Ok(mut p) => {
            std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
            p.bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            Ok(p)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(pid: u32) -> Vec<u8> {
        let mut v = STREAM_MAGIC.to_vec();
        for x in [STREAM_VERSION, 0, pid, 1] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(&0u64.to_le_bytes());
        v
    }

    fn chunk(tid: u32, recs: &[(u64, u64)]) -> Vec<u8> {
        let mut v = CHUNK_MAGIC.to_le_bytes().to_vec();
        v.extend_from_slice(&tid.to_le_bytes());
        v.extend_from_slice(&(recs.len() as u32).to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        for (a, m) in recs {
            v.extend_from_slice(&a.to_le_bytes());
            v.extend_from_slice(&m.to_le_bytes());
        }
        v
    }

    fn meta(icount: u64, size: u64, kind: u64) -> u64 {
        icount << 8 | (size - 1) << 2 | kind
    }

    fn decode(bytes: &[u8]) -> Result<Batch> {
        let mut s = RawStream::new(bytes, "t", false)?;
        crate::event_source::collect(|b| s.next_batch(b))
    }

    #[test]
    fn decodes_accesses_and_syscalls() {
        let mut v = hello(7);
        v.extend(chunk(7, &[(0x1000, meta(1, 8, 0)), (0x2000, meta(2, 4, 1))]));
        let mut recs = vec![(0u64, meta(3, 1, 3))];
        recs.extend([(0, 4096), (3, 0x22), (u64::MAX, 0), (0x7000, 0)]);
        recs.push((0x7000, meta(4, 64, 2)));
        v.extend(chunk(8, &recs));
        let b = decode(&v).unwrap();
        assert_eq!(b.addr, vec![0x1000, 0x2000, 0x7000]);
        assert_eq!(b.size, vec![8, 4, 64]);
        assert_eq!(b.kind, vec![0, 1, 2]);
        assert_eq!(b.tid, vec![7, 7, 8]);
        assert_eq!(b.side.len(), 1);
        let SideBody::Syscall(s) = &b.side[0].body else { panic!() };
        assert_eq!(s.kind, SyscallKind::Mmap);
        assert_eq!(s.args, [0, 4096, 3, 0x22, u64::MAX, 0]);
        assert_eq!(s.ret, 0x7000);
        assert_eq!(b.side[0].pos, 2);
    }

    #[test]
    fn reused_thread_id_keeps_counts_monotonic() {
        let mut v = hello(7);
        v.extend(chunk(9, &[(1, meta(100, 1, 0))]));
        v.extend(chunk(9, &[(2, meta(5, 1, 0)), (3, meta(6, 1, 0))]));
        let b = decode(&v).unwrap();
        assert_eq!(b.icount, vec![100, 100, 101]);
    }

    #[test]
    fn malformed_streams_name_the_offset() {
        let e = decode(b"not a stream at all, not at all!").unwrap_err().to_string();
        assert!(e.contains("offset 0"), "{e}");
        let mut v = hello(1);
        v.extend_from_slice(b"XXXXxxxxxxxxxxxx");
        let e = decode(&v).unwrap_err().to_string();
        assert!(e.contains("offset 32") && e.contains("CHNK"), "{e}");
        let mut v = hello(1);
        v.extend(chunk(1, &[(1, meta(1, 1, 0))]));
        v.truncate(v.len() - 3);
        let e = decode(&v).unwrap_err().to_string();
        assert!(e.contains("offset 32") && e.contains("inside a chunk"), "{e}");
        let mut v = hello(1);
        v.extend(chunk(1, &[(1, meta(1, 1, 0)), (99, meta(2, 1, 3))]));
        let e = decode(&v).unwrap_err().to_string();
        assert!(e.contains("offset 64"), "{e}");
        // Lenient streams (the recorder's) accept a cut-off end.
        let mut v = hello(1);
        v.extend(chunk(1, &[(1, meta(1, 1, 0))]));
        v.extend(chunk(1, &[(2, meta(2, 1, 0))]));
        v.truncate(v.len() - 3);
        let mut s = RawStream::new(&v[..], "t", true).unwrap();
        let mut b = Batch::default();
        assert!(s.next_batch(&mut b).unwrap());
        assert_eq!(b.len(), 1);
        assert!(s.truncated());
    }

    #[test]
    fn child_paths() {
        assert_eq!(child_trace_path(Path::new("a/run.xlat"), 42), PathBuf::from("a/run.42.xlat"));
        assert_eq!(child_trace_path(Path::new("run"), 42), PathBuf::from("run.42.xlat"));
    }
}
