//! `xlat._native`: the thin binding. It converts between Rust and Python, releases the GIL for
//! long calls and draws progress bars; everything else lives in the Rust crates (the work) or
//! the Python package (argument handling, docs, presentation).

mod progress;
mod simrun;

use numpy::PyArray1;
use progress::Progress;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::fs::File;
use std::io::{BufWriter, Write};
use xlat_trace::{text, Batch, Error, Event, EventSource, Marker, SideBody, TraceWriter, Window};

create_exception!(_native, XlatError, PyException, "Base class of the errors xlat reports to users.");
create_exception!(_native, TraceError, XlatError, "A trace file is empty, corrupt, truncated or of another version.");
create_exception!(_native, WorkloadError, XlatError, "A workload specification is invalid.");
create_exception!(_native, TraceIOError, XlatError, "Reading or writing a file failed.");
create_exception!(_native, EventError, XlatError, "Events are inconsistent (e.g. instruction counts going backwards).");

create_exception!(_native, ConfigError, XlatError, "A simulator configuration or mosaic layout is invalid.");
create_exception!(
    _native,
    SimulationError,
    XlatError,
    "The simulation could not go on (e.g. simulated physical memory ran out)."
);

fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Workload { .. } => WorkloadError::new_err(msg),
        Error::Io { .. } | Error::RawIo(_) => TraceIOError::new_err(msg),
        Error::InvalidEvent(_) => EventError::new_err(msg),
        _ => TraceError::new_err(msg),
    }
}

fn open(spec: &str) -> PyResult<Box<dyn EventSource>> {
    xlat_trace::source::open(spec).map_err(to_py)
}

/// A window from Python's (skip, warmup, limit) (`xlat_trace::Window`; None: the whole trace).
fn window_of(w: Option<(u64, u64, Option<u64>)>) -> Window {
    w.map_or_else(Window::default, |(skip, warmup, limit)| Window { skip, warmup, limit })
}

/// `spec` through the skip and limit of `window`, for a command that has no warm-up: a warm-up
/// is refused in one sentence naming the command.
fn open_skip_limit(spec: &str, window: Window, what: &str, pipeline: bool) -> PyResult<Box<dyn EventSource>> {
    if window.warmup > 0 {
        return Err(ConfigError::new_err(format!(
            "{what} takes --skip and --limit but no --warmup (it has no counters to start after a warm-up); give the accesses to pass over with --skip"
        )));
    }
    xlat_core::sim::open_window(spec, pipeline, window).map_err(sim_to_py)
}

fn side_to_py<'py>(py: Python<'py>, pos: u64, tid: u32, icount: u64, body: &SideBody) -> PyResult<Bound<'py, PyTuple>> {
    match body {
        SideBody::Syscall(s) => {
            let args = PyList::new(py, &s.args[..s.kind.nargs()])?;
            PyTuple::new(
                py,
                [
                    "syscall".into_pyobject(py)?.into_any(),
                    pos.into_pyobject(py)?.into_any(),
                    tid.into_pyobject(py)?.into_any(),
                    icount.into_pyobject(py)?.into_any(),
                    s.kind.name().into_pyobject(py)?.into_any(),
                    args.into_any(),
                    s.ret.into_pyobject(py)?.into_any(),
                ],
            )
        }
        SideBody::Marker(m) => {
            let fields = PyDict::new(py);
            match m {
                Marker::ContextSwitch { asid } => fields.set_item("asid", asid)?,
                Marker::IpcSend { peer, bytes } | Marker::IpcRecv { peer, bytes } => {
                    fields.set_item("peer", peer)?;
                    fields.set_item("bytes", bytes)?;
                }
                Marker::Phase { id, name } => {
                    fields.set_item("id", id)?;
                    fields.set_item("name", name)?;
                }
            }
            PyTuple::new(
                py,
                [
                    "marker".into_pyobject(py)?.into_any(),
                    pos.into_pyobject(py)?.into_any(),
                    tid.into_pyobject(py)?.into_any(),
                    icount.into_pyobject(py)?.into_any(),
                    m.name().into_pyobject(py)?.into_any(),
                    fields.into_any(),
                    py.None().into_bound(py),
                ],
            )
        }
    }
}

fn columns<'py>(py: Python<'py>, b: Batch, side_base: u64) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let side = PyList::empty(py);
    for s in &b.side {
        side.append(side_to_py(py, side_base + s.pos as u64, s.tid, s.icount, &s.body)?)?;
    }
    d.set_item("addr", PyArray1::from_vec(py, b.addr))?;
    d.set_item("icount", PyArray1::from_vec(py, b.icount))?;
    d.set_item("tid", PyArray1::from_vec(py, b.tid))?;
    d.set_item("size", PyArray1::from_vec(py, b.size))?;
    d.set_item("kind", PyArray1::from_vec(py, b.kind))?;
    d.set_item("side", side)?;
    Ok(d)
}

/// An open event source (trace file, text trace or workload), read batch by batch.
#[pyclass(module = "xlat._native")]
struct Source {
    // pyclasses must be Sync; the lock is uncontended (Python calls hold the GIL).
    inner: std::sync::Mutex<Box<dyn EventSource>>,
    read: u64,
}

#[pymethods]
impl Source {
    #[new]
    fn new(spec: &str) -> PyResult<Source> {
        Ok(Source { inner: std::sync::Mutex::new(open(spec)?), read: 0 })
    }

    /// The header as a JSON string.
    fn header_json(&self) -> String {
        serde_json::to_string(self.src().header()).expect("header serialises")
    }

    /// The footer as a JSON string, once the end of a trace file was read.
    fn footer_json(&self) -> Option<String> {
        self.src().footer().map(|f| serde_json::to_string(f).expect("footer serialises"))
    }

    /// The next batch as a dict of numpy columns plus `side` events (positions are global
    /// access indices), or None at the end.
    fn next_batch<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mut b = Batch::default();
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        let more = py.allow_threads(|| inner.next_batch(&mut b)).map_err(to_py)?;
        if !more {
            return Ok(None);
        }
        let base = self.read;
        self.read += b.len() as u64;
        columns(py, b, base).map(Some)
    }

    /// Events of the next batch, one tuple per event, or None at the end. Accesses are
    /// ("access", tid, icount, kind letter, addr, size); side events as in `next_batch`.
    fn next_events<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let mut b = Batch::default();
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        if !py.allow_threads(|| inner.next_batch(&mut b)).map_err(to_py)? {
            return Ok(None);
        }
        let out = PyList::empty(py);
        let mut i = self.read;
        for e in b.events() {
            match e {
                Event::Access(a) => {
                    i += 1;
                    out.append(("access", a.tid, a.icount, a.kind.letter().to_string(), a.addr, a.size))?
                }
                Event::Side { tid, icount, body } => out.append(side_to_py(py, i, tid, icount, &body)?)?,
            }
        }
        self.read = i;
        Ok(Some(out))
    }

    fn progress(&self) -> (u64, Option<u64>) {
        self.src().progress()
    }
}

impl Source {
    fn src(&self) -> std::sync::MutexGuard<'_, Box<dyn EventSource>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Read up to `limit` accesses of `spec` into numpy columns (one dict, like `next_batch`).
#[pyfunction]
#[pyo3(signature = (spec, limit=None, progress=false, skip=0))]
fn read_accesses<'py>(
    py: Python<'py>,
    spec: &str,
    limit: Option<u64>,
    progress: bool,
    skip: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let mut src = open_skip_limit(spec, Window { skip, warmup: 0, limit }, "read_accesses", false)?;
    let all = py
        .allow_threads(|| -> xlat_trace::Result<Batch> {
            let bar = Progress::new(progress, src.as_ref(), "reading");
            let mut all = Batch::default();
            let mut b = Batch::default();
            let limit = limit.unwrap_or(u64::MAX) as usize;
            while all.len() < limit && src.next_batch(&mut b)? {
                all.append(&b);
                bar.update(src.as_ref());
            }
            all.truncate(limit);
            Ok(all)
        })
        .map_err(to_py)?;
    columns(py, all, 0)
}

/// Write `spec` (one thread's accesses: `tid`, or the only thread) as a ChampSim trace to `out`
/// (xz for `.xz`, gzip for `.gz`, else raw; xz preset / gzip `level`). Written to
/// `out.partial` and renamed when complete. Returns a JSON summary
/// ([`xlat_trace::export::champsim::ExportSummary`] with `path`, `bytes`, `compression`).
#[pyfunction]
#[pyo3(signature = (spec, out, tid=None, level=1, progress=false))]
fn export_champsim(
    py: Python<'_>,
    spec: &str,
    out: &str,
    tid: Option<u32>,
    level: u32,
    progress: bool,
) -> PyResult<String> {
    use xlat_trace::export::champsim;
    let mut src = open(spec)?;
    let out = out.to_string();
    py.allow_threads(move || -> xlat_trace::Result<String> {
        let tmp = format!("{out}.partial");
        let io = |e: std::io::Error| Error::Io { path: tmp.clone().into(), source: e };
        let file = File::create(&tmp).map_err(io)?;
        let compression = champsim::compression_of(&out);
        let bar = Progress::new(progress, src.as_ref(), "exporting");
        let result = champsim::export_file(src.as_mut(), file, compression, level, tid, |s| bar.update(s)).map_err(
            |e| match e {
                Error::RawIo(source) => Error::Io { path: tmp.clone().into(), source },
                e => e,
            },
        );
        drop(bar);
        match result {
            Ok(summary) => {
                std::fs::rename(&tmp, &out).map_err(|e| Error::Io { path: out.clone().into(), source: e })?;
                let mut v = serde_json::to_value(&summary).expect("a summary serialises");
                v["bytes"] = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0).into();
                v["path"] = out.clone().into();
                v["compression"] = compression.into();
                Ok(v.to_string())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    })
    .map_err(to_py)
}

/// Write every event of `spec` to `out`: the text form if `out` ends in `.txt`, else the
/// compressed format at zstd `level`. Written to `out.partial` and renamed when complete.
/// Returns a JSON summary.
#[pyfunction]
#[pyo3(signature = (spec, out, level=3, progress=false, minor=xlat_trace::format::VERSION_MINOR, window=None))]
fn convert(
    py: Python<'_>,
    spec: &str,
    out: &str,
    level: i32,
    progress: bool,
    minor: u16,
    window: Option<(u64, u64, Option<u64>)>,
) -> PyResult<String> {
    let mut src = open_skip_limit(spec, window_of(window), "xlat cut", false)?;
    let out = out.to_string();
    py.allow_threads(move || -> xlat_trace::Result<String> {
        let tmp = format!("{out}.partial");
        let io = |e: std::io::Error| Error::Io { path: tmp.clone().into(), source: e };
        // A write that fails (a full disk) names the file being written.
        let wio = |e: Error| match e {
            Error::RawIo(source) => Error::Io { path: tmp.clone().into(), source },
            e => e,
        };
        let file = File::create(&tmp).map_err(io)?;
        let result = (|| -> xlat_trace::Result<serde_json::Value> {
            let bar = Progress::new(progress, src.as_ref(), "converting");
            let mut b = Batch::default();
            if text::is_text_path(&out) {
                let mut w = text::TextWriter::new(BufWriter::with_capacity(1 << 20, file), src.header()).map_err(wio)?;
                while src.next_batch(&mut b)? {
                    w.write_batch(&b).map_err(wio)?;
                    bar.update(src.as_ref());
                }
                let n = w.accesses();
                w.finish().map_err(wio)?.flush().map_err(io)?;
                Ok(serde_json::json!({"accesses": n, "format": "text"}))
            } else {
                let mut w =
                    TraceWriter::with_options(BufWriter::with_capacity(1 << 20, file), src.header(), level, minor)
                        .map_err(wio)?;
                while src.next_batch(&mut b)? {
                    w.write_batch(&b).map_err(wio)?;
                    bar.update(src.as_ref());
                }
                let (mut f, footer) = w.finish().map_err(wio)?;
                f.flush().map_err(io)?;
                Ok(serde_json::json!({"accesses": footer.accesses, "side_events": footer.side_events, "format": "xlat"}))
            }
        })();
        match result {
            Ok(mut v) => {
                std::fs::rename(&tmp, &out).map_err(|e| Error::Io { path: out.clone().into(), source: e })?;
                let bytes = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
                v["bytes"] = bytes.into();
                v["path"] = out.clone().into();
                Ok(v.to_string())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    })
    .map_err(to_py)
}

/// Summary statistics of `spec` as a JSON string.
#[pyfunction]
#[pyo3(signature = (spec, progress=false))]
fn trace_info(py: Python<'_>, spec: &str, progress: bool) -> PyResult<String> {
    let mut src = open(spec)?;
    py.allow_threads(move || -> xlat_trace::Result<String> {
        let bar = Progress::new(progress, src.as_ref(), "reading");
        let info = xlat_trace::info::trace_info(src.as_mut(), |s| bar.update(s))?;
        drop(bar);
        let file_bytes =
            if spec.starts_with("workload:") { None } else { std::fs::metadata(spec).ok().map(|m| m.len()) };
        Ok(serde_json::json!({
            "source": spec,
            "format": src.format(),
            "header": src.header(),
            "footer": src.footer(),
            "file_bytes": file_bytes,
            "info": info,
        })
        .to_string())
    })
    .map_err(to_py)
}

/// The fidelity analysis of `spec` (`xlat_core::analysis::fidelity`) as a JSON string: epoch
/// length and window lengths in instructions, granularities in bits per 2MB page.
#[pyfunction]
#[pyo3(signature = (spec, epoch, granularities, scales, progress=false, window=None))]
fn fidelity(
    py: Python<'_>,
    spec: &str,
    epoch: u64,
    granularities: Vec<u32>,
    scales: Vec<u64>,
    progress: bool,
    window: Option<(u64, u64, Option<u64>)>,
) -> PyResult<String> {
    use xlat_core::analysis::fidelity::{analyze, FidelityConfig};
    let cfg = FidelityConfig { epoch, granularities, scales };
    cfg.validate().map_err(|e| ConfigError::new_err(e.to_string()))?;
    let pipeline = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    let mut src = open_skip_limit(spec, window_of(window), "xlat fidelity", pipeline)?;
    let r = py.allow_threads(move || {
        let bar = Progress::new(progress, src.as_ref(), "analysing");
        analyze(src.as_mut(), &cfg, |s| bar.update(s))
    });
    r.map(|r| r.to_json()).map_err(analysis_to_py)
}

/// An analysis' error as the Python exception the CLI reports (a configuration sentence, or the
/// trace's own error).
fn analysis_to_py(e: xlat_core::analysis::AnalysisError) -> PyErr {
    use xlat_core::analysis::AnalysisError;
    match e {
        AnalysisError::Trace(e) => to_py(e),
        e @ AnalysisError::Config(_) => ConfigError::new_err(e.to_string()),
    }
}

/// The eviction study of `spec` (`xlat_core::analysis::reclaim`) as a JSON string: two passes
/// over the source (footprint, then one reclaim engine per granularity).
#[pyfunction]
#[pyo3(signature = (spec, fraction, granularities, epoch, fault_us, read_bandwidth, write_bandwidth, progress=false, window=None))]
#[allow(clippy::too_many_arguments)]
fn reclaim(
    py: Python<'_>,
    spec: &str,
    fraction: f64,
    granularities: Vec<u32>,
    epoch: u64,
    fault_us: f64,
    read_bandwidth: f64,
    write_bandwidth: f64,
    progress: bool,
    window: Option<(u64, u64, Option<u64>)>,
) -> PyResult<String> {
    use xlat_core::analysis::reclaim::{analyze, ReclaimConfig};
    let cfg = ReclaimConfig { fraction, granularities, epoch, fault_us, read_bandwidth, write_bandwidth };
    cfg.validate().map_err(|e| ConfigError::new_err(e.to_string()))?;
    let pipeline = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    let w = window_of(window);
    let mut first = open_skip_limit(spec, w, "xlat reclaim", pipeline)?;
    let mut second = open_skip_limit(spec, w, "xlat reclaim", pipeline)?;
    let r = py.allow_threads(move || {
        let bar = Progress::new(progress, first.as_ref(), "reclaim (2 passes)");
        analyze(first.as_mut(), second.as_mut(), &cfg, |s| bar.update(s))
    });
    r.map(|r| r.to_json()).map_err(analysis_to_py)
}

/// Seed 003's Observation 1 on `spec` (`xlat_core::analysis::touch`) as a JSON string: the
/// histogram and CDF of touched 4KB pages per 2MB superpage per interval of `interval`
/// instructions.
#[pyfunction]
#[pyo3(signature = (spec, interval, progress=false, window=None))]
fn superpage_touch(
    py: Python<'_>,
    spec: &str,
    interval: u64,
    progress: bool,
    window: Option<(u64, u64, Option<u64>)>,
) -> PyResult<String> {
    use xlat_core::analysis::touch::analyze;
    let pipeline = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    let mut src = open_skip_limit(spec, window_of(window), "the superpage touch analysis", pipeline)?;
    let r = py.allow_threads(move || {
        let bar = Progress::new(progress, src.as_ref(), "touched pages");
        analyze(src.as_mut(), interval, |s| bar.update(s))
    });
    r.map(|r| r.to_json()).map_err(analysis_to_py)
}

/// One-pass miss-ratio curves of `spec` (`xlat_core::analysis::mrc`) under the configuration
/// (name, TOML, overrides, layout) whose OS model chooses page sizes, as a JSON string:
/// set counts, most entries, page sizes ("4KB", "2MB", "1GB").
#[pyfunction]
#[pyo3(signature = (spec, config, sets, max_entries, page_sizes, progress=false, window=None))]
#[allow(clippy::too_many_arguments)]
fn mrc(
    py: Python<'_>,
    spec: &str,
    config: (String, String, Vec<String>, Option<(String, String)>),
    sets: Vec<usize>,
    max_entries: usize,
    page_sizes: Vec<String>,
    progress: bool,
    window: Option<(u64, u64, Option<u64>)>,
) -> PyResult<String> {
    use xlat_core::analysis::mrc::{analyze, MrcConfig, MrcError};
    use xlat_core::units::PageSize;
    let page_sizes = page_sizes
        .iter()
        .map(|p| {
            PageSize::ALL
                .into_iter()
                .find(|s| s.name() == p)
                .ok_or_else(|| ConfigError::new_err(format!("unknown page size '{p}' (known: 4KB, 2MB, 1GB).")))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let req = MrcConfig { sets, max_entries, page_sizes };
    req.validate().map_err(|e| ConfigError::new_err(e.to_string()))?;
    let (w, t, s, l) = config;
    let cfg = build_config(&w, &t, &s, l)?;
    let pipeline = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    let mut src = open_skip_limit(spec, window_of(window), "xlat mrc", pipeline)?;
    let spec = spec.to_string();
    let r = py.allow_threads(move || {
        let bar = Progress::new(progress, src.as_ref(), "miss-ratio curves");
        analyze(src.as_mut(), &spec, &cfg, &req, |s| bar.update(s))
    });
    match r {
        Ok(r) => Ok(r.to_json()),
        Err(MrcError::Trace(e)) => Err(to_py(e)),
        Err(MrcError::Sim(e)) => Err(SimulationError::new_err(e.to_string())),
        Err(e @ MrcError::Config(_)) => Err(ConfigError::new_err(e.to_string())),
    }
}

/// The single-level configuration a miss-ratio curve models (`single_level_toml`), from a
/// configuration's TOML text.
#[pyfunction]
fn mrc_single_level(text: &str) -> PyResult<String> {
    xlat_core::analysis::mrc::single_level_toml(text).map_err(ConfigError::new_err)
}

/// The workload catalogue as a JSON string.
#[pyfunction]
fn workloads() -> String {
    let param = |p: &xlat_trace::workload::ParamSpec| serde_json::json!({"name": p.name, "default": p.default, "help": p.help, "kind": format!("{:?}", p.kind)});
    let list: Vec<_> = xlat_trace::workload::catalog()
        .iter()
        .map(|w| {
            let params: Vec<_> = w.params.iter().chain(xlat_trace::workload::COMMON_PARAMS).map(param).collect();
            serde_json::json!({"name": w.name, "help": w.help, "params": params})
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}

fn sim_to_py(e: xlat_core::sim::Error) -> PyErr {
    match e {
        xlat_core::sim::Error::Trace(e) => to_py(e),
        xlat_core::sim::Error::Sim(e) => SimulationError::new_err(e.to_string()),
        xlat_core::sim::Error::Config(e) => ConfigError::new_err(e.to_string()),
        e @ xlat_core::sim::Error::Window(_) => ConfigError::new_err(e.to_string()),
        // (A bug of xlat's, reported as an error Python can catch, not a panic.)
        e @ xlat_core::sim::Error::Invariant(_) => SimulationError::new_err(e.to_string()),
    }
}

/// Names of the CPU presets.
#[pyfunction]
fn presets() -> Vec<&'static str> {
    xlat_core::presets::names()
}

/// The TOML text of a CPU preset.
#[pyfunction]
fn preset(name: &str) -> PyResult<&'static str> {
    xlat_core::presets::get(name).ok_or_else(|| {
        ConfigError::new_err(format!(
            "there is no CPU preset named '{name}' (known: {}).",
            xlat_core::presets::names().join(", ")
        ))
    })
}

/// Check a mosaic layout; returns it as JSON.
#[pyfunction]
fn check_layout(what: &str, text: &str) -> PyResult<String> {
    let l = xlat_core::layout::Layout::from_toml(what, text).map_err(|e| ConfigError::new_err(e.to_string()))?;
    Ok(serde_json::to_string(&l).expect("layout serialises"))
}

/// Refuse configurations whose structures, `at_once` of them alive together, need more host
/// memory than there is (each alone is checked when its simulator is built).
fn check_together(cfgs: &[xlat_core::Config], at_once: usize) -> PyResult<()> {
    use xlat_core::config::footprint::{check_host_memory_together, mem_available};
    check_host_memory_together(cfgs, at_once, mem_available()).map_err(|e| ConfigError::new_err(e.to_string()))
}

/// Build and validate one configuration: (name, TOML text, overrides, optional (name, layout
/// TOML)). A layout selects the mosaic policy.
fn build_config(
    what: &str,
    text: &str,
    sets: &[String],
    layout: Option<(String, String)>,
) -> PyResult<xlat_core::Config> {
    let ce = |e: xlat_core::ConfigError| ConfigError::new_err(e.to_string());
    let layout = match layout {
        Some((lw, lt)) => Some(xlat_core::layout::Layout::from_toml(&lw, &lt).map_err(ce)?),
        None => None,
    };
    xlat_core::Config::build(what, text, sets, layout).map_err(ce)
}

/// Simulate `spec` under each configuration (name, TOML, overrides, layout) on up to `threads`
/// threads (default: all cores), reading the input once for all of them when their simulators
/// fit in memory together; in configuration order, (JSON result, seconds opening the input,
/// seconds opening and reading it, seconds in all) per configuration (`simrun`).
#[pyfunction]
#[pyo3(signature = (spec, configs, threads=None, progress=false, window=None))]
#[allow(clippy::type_complexity)]
fn simulate(
    py: Python<'_>,
    spec: &str,
    configs: Vec<(String, String, Vec<String>, Option<(String, String)>)>,
    threads: Option<usize>,
    progress: bool,
    window: Option<(u64, u64, Option<u64>)>,
) -> PyResult<Vec<(String, f64, f64, f64)>> {
    let window = window_of(window);
    let cfgs = configs.iter().map(|(w, t, s, l)| build_config(w, t, s, l.clone())).collect::<PyResult<Vec<_>>>()?;
    let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // Several configurations read the input once (simrun::simulate_broadcast) when all their
    // simulators fit in memory together; else each reads it itself, `threads` at a time.
    let broadcast = cfgs.len() > 1 && check_together(&cfgs, cfgs.len()).is_ok();
    if !broadcast {
        check_together(&cfgs, threads.min(cfgs.len()))?;
    }
    let spec = spec.to_string();
    let out = py.allow_threads(move || -> Result<Vec<(String, f64, f64, f64)>, xlat_core::sim::Error> {
        let runs = if broadcast {
            simrun::simulate_broadcast(&spec, &cfgs, threads, progress, window)?
        } else {
            simrun::simulate_timed(&spec, &cfgs, threads, progress, window)
        };
        runs.into_iter().map(|r| r.map(|(r, t)| (r.to_json(), t.open_s, t.input_s, t.total_s))).collect()
    });
    out.map_err(sim_to_py)
}

/// Simulate `spec` under each configuration (as `simulate`) on this thread, decoding the input
/// once for all of them (`simrun::simulate_shared`; with `pipeline` on a thread of its own); per configuration, (JSON result, None) or
/// (None, the error) - a failing configuration does not stop the others. Configurations that
/// cannot be built fail the call (checked first, like `simulate`).
#[pyfunction]
#[pyo3(signature = (spec, configs, pipeline=false, window=None))]
#[allow(clippy::type_complexity)]
fn simulate_shared(
    py: Python<'_>,
    spec: &str,
    configs: Vec<(String, String, Vec<String>, Option<(String, String)>)>,
    pipeline: bool,
    window: Option<(u64, u64, Option<u64>)>,
) -> PyResult<Vec<(Option<String>, Option<String>)>> {
    let window = window_of(window);
    let cfgs = configs.iter().map(|(w, t, s, l)| build_config(w, t, s, l.clone())).collect::<PyResult<Vec<_>>>()?;
    check_together(&cfgs, cfgs.len())?;
    let spec = spec.to_string();
    let out = py.allow_threads(move || simrun::simulate_shared(&spec, &cfgs, pipeline, window)).map_err(sim_to_py)?;
    Ok(out
        .into_iter()
        .map(|r| match r {
            Ok(j) => (Some(j), None),
            Err(e) => (None, Some(e)),
        })
        .collect())
}

/// Build and check one configuration (name, TOML, overrides, layout) without simulating:
/// the effective configuration as JSON, or the `ConfigError` a simulation would raise.
#[pyfunction]
#[pyo3(signature = (what, text, sets, layout=None))]
fn check_config(what: &str, text: &str, sets: Vec<String>, layout: Option<(String, String)>) -> PyResult<String> {
    let cfg = build_config(what, text, &sets, layout)?;
    Ok(serde_json::to_string(&cfg).expect("config serialises"))
}

/// Run a program under QEMU with the xlat plugin and write its traces (see
/// `xlat_trace::import::qemu::record`). `header_json` is the header template. Returns the
/// summary as JSON. The GIL is released while the program runs; Ctrl-C stops it, and so does
/// `timeout` (seconds): then the summary's `timed_out` is true.
#[pyfunction]
#[pyo3(signature = (qemu, plugin, program, out, header_json, argv0=None, qemu_args=Vec::new(), skip=0, max=None, ifetch=false, level=3, progress=false, timeout=None))]
#[allow(clippy::too_many_arguments)]
fn record_trace(
    py: Python<'_>,
    qemu: &str,
    plugin: &str,
    program: Vec<String>,
    out: &str,
    header_json: &str,
    argv0: Option<String>,
    qemu_args: Vec<String>,
    skip: u64,
    max: Option<u64>,
    ifetch: bool,
    level: i32,
    progress: bool,
    timeout: Option<f64>,
) -> PyResult<String> {
    use xlat_trace::import::qemu::{record, RecordOptions};
    let header: xlat_trace::Header =
        serde_json::from_str(header_json).map_err(|e| EventError::new_err(format!("invalid header template: {e}")))?;
    let opts = RecordOptions {
        qemu: qemu.into(),
        plugin: plugin.into(),
        program,
        argv0,
        qemu_args,
        out: out.into(),
        skip,
        max,
        ifetch,
        level,
        header,
    };
    py.allow_threads(move || -> xlat_trace::Result<String> {
        let bar = progress.then(|| progress::spinner("{spinner} tracing [{elapsed_precise}] {msg}"));
        let mut timed_out = false;
        let summary = record(&opts, |p| {
            if timeout.is_some_and(|t| p.seconds >= t) {
                timed_out = true;
                return false;
            }
            if let Some(b) = &bar {
                let rate = if p.seconds > 0.0 { p.accesses as f64 / p.seconds / 1e6 } else { 0.0 };
                b.set_message(format!(
                    "{:.1} M accesses, {:.1} MiB written, {rate:.1} M accesses/s, {} process(es)",
                    p.accesses as f64 / 1e6,
                    p.bytes as f64 / (1 << 20) as f64,
                    p.processes
                ));
                b.tick();
            }
            // Ctrl-C: run Python's signal handlers; an exception means stop the program.
            Python::with_gil(|py| py.check_signals().is_ok())
        });
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        let mut v = serde_json::to_value(&summary?).expect("summary serialises");
        v["timed_out"] = timed_out.into();
        Ok(v.to_string())
    })
    .map_err(to_py)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("XlatError", py.get_type::<XlatError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("WorkloadError", py.get_type::<WorkloadError>())?;
    m.add("TraceIOError", py.get_type::<TraceIOError>())?;
    m.add("EventError", py.get_type::<EventError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    m.add_class::<Source>()?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(preset, m)?)?;
    m.add_function(wrap_pyfunction!(check_layout, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_shared, m)?)?;
    m.add_function(wrap_pyfunction!(check_config, m)?)?;
    m.add_function(wrap_pyfunction!(read_accesses, m)?)?;
    m.add_function(wrap_pyfunction!(convert, m)?)?;
    m.add_function(wrap_pyfunction!(export_champsim, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(fidelity, m)?)?;
    m.add_function(wrap_pyfunction!(reclaim, m)?)?;
    m.add_function(wrap_pyfunction!(superpage_touch, m)?)?;
    m.add_function(wrap_pyfunction!(mrc, m)?)?;
    m.add_function(wrap_pyfunction!(mrc_single_level, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(record_trace, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
