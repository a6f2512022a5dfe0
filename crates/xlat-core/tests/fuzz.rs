//! Fuzzing in CI (issue 24): seeded mutation fuzzers for the binary trace reader, the text
//! trace reader, the configuration and layout parsers, and the simulator's event handling.
//! Each target starts from its seed corpus (`tests/corpus/TARGET/`, small real files: traces
//! cut from real ones, presets, layouts) and every crash kept in `tests/corpus/crashes/TARGET/`,
//! then runs mutants of them for a bounded time. A mutant may be refused (an error is a
//! sentence), but none may panic: a panic saves the input to `target/fuzz-crashes/` and fails
//! the test, naming the file (copy it to `tests/corpus/crashes/TARGET/` to keep it as a
//! regression case).
//!
//! `XLAT_FUZZ_SECS` (default 15) bounds each target; `XLAT_FUZZ_SEED` picks the mutation seed
//! (default: fixed, so CI runs the same mutants; see docs/fuzzing.md for the long run).
//! Not coverage-guided (cargo-fuzz needs a nightly compiler); the mutators know the formats
//! instead: block records, numbers, lines and events.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus as Rng64;
use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use xlat_core::config::layout::Layout;
use xlat_core::config::Config;
use xlat_core::Simulator;
use xlat_trace::text::TextSource;
use xlat_trace::{info::InfoBuilder, Batch, Event, EventSource, SideBody, TraceReader, TraceWriter};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");

/// Numbers that find edges: zero, one, the tops of u32/u64/i64, a 2MB and a 1GB boundary.
const EDGES: [u64; 10] =
    [0, 1, 4095, 4096, 1 << 21, 1 << 30, u32::MAX as u64, i64::MAX as u64, u64::MAX - 4095, u64::MAX];

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for dir in [format!("{CORPUS}/{target}"), format!("{CORPUS}/crashes/{target}")] {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        out.extend(paths.iter().filter(|p| p.is_file()).map(|p| std::fs::read(p).unwrap()));
    }
    assert!(!out.is_empty(), "no seeds for {target}");
    out
}

/// Byte-level mutations: flips, edge values, inserted, deleted, repeated or swapped chunks, a
/// cut, a splice from another seed.
fn mutate_bytes(r: &mut Rng64, data: &mut Vec<u8>, other: &[u8]) {
    for _ in 0..r.gen_range(1..=4) {
        let n = data.len();
        let at = if n == 0 { 0 } else { r.gen_range(0..n) };
        match r.gen_range(0..9) {
            0 if n > 0 => data[at] ^= 1 << r.gen_range(0..8),
            1 if n > 0 => data[at] = [0, 0xff, 0x7f, 0x80, b'\n', b' '][r.gen_range(0..6)],
            2 if n >= 8 => {
                let at = r.gen_range(0..=n - 8);
                let w = if r.gen() { 4 } else { 8 };
                let v = EDGES[r.gen_range(0..EDGES.len())].to_le_bytes();
                data[at..at + w].copy_from_slice(&v[..w]);
            }
            3 => {
                let k = r.gen_range(1..16);
                let bytes: Vec<u8> = (0..k).map(|_| r.gen()).collect();
                data.splice(at..at, bytes);
            }
            4 if n > 0 => {
                let end = (at + r.gen_range(1..64)).min(n);
                data.drain(at..end);
            }
            5 if n > 0 => {
                // Repeat a chunk elsewhere (blocks, lines, records).
                let end = (at + r.gen_range(1..512)).min(n);
                let chunk = data[at..end].to_vec();
                let to = r.gen_range(0..=n);
                data.splice(to..to, chunk);
            }
            6 if n > 2 => {
                // Swap two chunks of the same length.
                let k = r.gen_range(1..=n / 2);
                let a = r.gen_range(0..=n - 2 * k);
                let b = r.gen_range(a + k..=n - k);
                let (x, y) = data.split_at_mut(b);
                x[a..a + k].swap_with_slice(&mut y[..k]);
            }
            7 => data.truncate(at),
            _ if !other.is_empty() => {
                let from = r.gen_range(0..other.len());
                let end = (from + r.gen_range(1..256)).min(other.len());
                data.splice(at..(at + end - from).min(n), other[from..end].iter().copied());
            }
            _ => {}
        }
    }
}

/// Line-level mutations of text (traces, TOML): lines repeated, dropped or swapped, a number
/// replaced by an edge value, a token dropped, a blank or whitespace line; then bytes too.
fn mutate_lines(r: &mut Rng64, data: &mut Vec<u8>, other: &[u8]) {
    let text = String::from_utf8_lossy(data).into_owned();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..r.gen_range(1..=3) {
        let n = lines.len();
        if n == 0 {
            lines.push(String::new());
            continue;
        }
        let i = r.gen_range(0..n);
        match r.gen_range(0..7) {
            0 => {
                let l = lines[i].clone();
                lines.insert(r.gen_range(0..=n), l);
            }
            1 => {
                lines.remove(i);
            }
            2 => lines.swap(i, r.gen_range(0..n)),
            3 | 4 => {
                // A number (decimal or hex) becomes an edge value or its neighbour.
                let mut toks: Vec<String> = lines[i].split(' ').map(str::to_string).collect();
                let k = r.gen_range(0..toks.len());
                let v = EDGES[r.gen_range(0..EDGES.len())].wrapping_add(r.gen_range(0..3)).wrapping_sub(1);
                toks[k] = match r.gen_range(0..4) {
                    0 => format!("{v:#x}"),
                    1 => format!("-{v}"),
                    2 => format!("{}", v as f64 * 1.5),
                    _ => v.to_string(),
                };
                lines[i] = toks.join(" ");
            }
            5 => {
                let mut toks: Vec<&str> = lines[i].split(' ').collect();
                toks.remove(r.gen_range(0..toks.len()));
                lines[i] = toks.join(" ");
            }
            _ => lines.insert(i, [" ", "\t", "", "  \t "][r.gen_range(0..4)].to_string()),
        }
    }
    *data = (lines.join("\n") + if r.gen_range(0..8) == 0 { "" } else { "\n" }).into_bytes();
    if r.gen_range(0..4) == 0 {
        mutate_bytes(r, data, other);
    }
}

// ---------------------------------------------------------------- targets

fn trace_reader(data: &[u8]) {
    let Ok(mut rd) = TraceReader::new(data, "fuzz.xlat") else { return };
    let (mut b, mut info) = (Batch::default(), InfoBuilder::default());
    while let Ok(true) = rd.next_batch(&mut b) {
        info.add(&b);
    }
}

fn text_reader(data: &[u8]) {
    let lines = Box::new(Cursor::new(data.to_vec()));
    let Ok(mut src) = TextSource::from_reader(lines, "fuzz.txt", Some(data.len() as u64)) else { return };
    let (mut b, mut info) = (Batch::default(), InfoBuilder::default());
    let mut w = TraceWriter::new(Vec::new(), src.header()).unwrap();
    while let Ok(true) = src.next_batch(&mut b) {
        info.add(&b);
        // What convert does: the writer's own checks.
        if w.write_batch(&b).is_err() {
            return;
        }
    }
}

/// TOML, then after a line `---` one `--set` value per line.
fn config_parser(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (toml, sets) = text.split_once("\n---\n").unwrap_or((&text, ""));
    let sets: Vec<String> = sets.lines().map(str::to_string).collect();
    if let Ok(cfg) = Config::build("fuzz.toml", toml, &sets, None) {
        let _ = cfg.to_json();
        let _ = xlat_core::config::footprint::footprint(&cfg);
    }
}

fn layout_parser(data: &[u8]) {
    let _ = Layout::from_toml("fuzz.toml", &String::from_utf8_lossy(data));
}

/// The simulator on a small machine (the tiny preset, 64MiB of memory) under the events of a
/// trace whose events were mutated: syscalls of any kind with edge arguments, accesses
/// anywhere, events repeated, dropped or reordered.
fn simulator(cfg: &Config, events: &[Event]) {
    let Ok(mut sim) = Simulator::new(cfg) else { return };
    let mut b = Batch::default();
    for chunk in events.chunks(64) {
        b.clear();
        for e in chunk {
            b.push_event(e.clone());
        }
        if sim.batch(&b).is_err() {
            return;
        }
    }
}

fn mutate_events(r: &mut Rng64, evs: &mut Vec<Event>) {
    use xlat_trace::SyscallKind;
    for _ in 0..r.gen_range(1..=6) {
        let n = evs.len();
        if n == 0 {
            return;
        }
        let i = r.gen_range(0..n);
        let edge = |r: &mut Rng64| EDGES[r.gen_range(0..EDGES.len())];
        match r.gen_range(0..6) {
            0 => {
                let e = evs[i].clone();
                evs.insert(r.gen_range(0..=n), e);
            }
            1 => {
                evs.remove(i);
            }
            2 => evs.swap(i, r.gen_range(0..n)),
            3 => match &mut evs[i] {
                Event::Access(a) => a.addr = if r.gen() { edge(r) } else { a.addr ^ (1 << r.gen_range(0..64)) },
                Event::Side { body: SideBody::Syscall(s), .. } => {
                    let k = r.gen_range(0..6);
                    s.args[k] = if r.gen() { edge(r) } else { s.args[k] ^ (1 << r.gen_range(0..64)) };
                }
                _ => {}
            },
            4 => {
                if let Event::Side { body: SideBody::Syscall(s), .. } = &mut evs[i] {
                    s.kind = SyscallKind::ALL[r.gen_range(0..SyscallKind::ALL.len())];
                    s.ret = if r.gen() { -(r.gen_range(1..40i64)) } else { edge(r) as i64 };
                }
            }
            _ => {
                // An access in the middle of a mapping a syscall just named.
                let near = evs.iter().rev().find_map(|e| match e {
                    Event::Side { body: SideBody::Syscall(s), .. } => Some(s.args[0]),
                    _ => None,
                });
                if let (Some(base), Event::Access(a)) = (near, &mut evs[i]) {
                    a.addr = base.wrapping_add(r.gen_range(0..1 << 22));
                }
            }
        }
    }
}

// ---------------------------------------------------------------- the driver

struct Report {
    target: &'static str,
    execs: u64,
    secs: f64,
    crashes: Vec<PathBuf>,
}

fn budget() -> Duration {
    let secs = std::env::var("XLAT_FUZZ_SECS").ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(15.0);
    Duration::from_secs_f64(secs)
}

fn seed() -> u64 {
    std::env::var("XLAT_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(24)
}

/// Run `exec` on every seed, then on mutants until the budget is spent; panics are caught and
/// their inputs saved.
fn fuzz<T>(
    target: &'static str,
    seeds: Vec<T>,
    mutate: impl Fn(&mut Rng64, &mut T, &T),
    exec: impl Fn(&T),
    save: impl Fn(&T) -> Vec<u8>,
) -> Report
where
    T: Clone,
{
    let mut r = Rng64::seed_from_u64(seed() ^ (target.len() as u64 * 0x9e37_79b9));
    let (start, limit) = (Instant::now(), budget());
    let mut rep = Report { target, execs: 0, secs: 0.0, crashes: Vec::new() };
    let run = |input: &T, rep: &mut Report| {
        rep.execs += 1;
        if catch_unwind(AssertUnwindSafe(|| exec(input))).is_err() {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-crashes");
            std::fs::create_dir_all(&dir).unwrap();
            let p = dir.join(format!("{target}-{}-{}", seed(), rep.execs));
            std::fs::write(&p, save(input)).unwrap();
            rep.crashes.push(p);
        }
    };
    for s in &seeds {
        run(s, &mut rep);
    }
    while start.elapsed() < limit && rep.crashes.len() < 5 {
        // Batches of mutants between clock reads.
        for _ in 0..64 {
            let base = &seeds[r.gen_range(0..seeds.len())];
            let other = &seeds[r.gen_range(0..seeds.len())];
            let mut m = base.clone();
            // Mutants of mutants: a few generations deep.
            for _ in 0..r.gen_range(1..=3) {
                mutate(&mut r, &mut m, other);
            }
            run(&m, &mut rep);
        }
    }
    rep.secs = start.elapsed().as_secs_f64();
    rep
}

fn check(rep: Report) {
    println!("fuzz {}: {} execs in {:.1} s, {} crashes", rep.target, rep.execs, rep.secs, rep.crashes.len());
    assert!(rep.execs > 0);
    assert!(rep.crashes.is_empty(), "fuzz {}: inputs that panic were saved to {:?}", rep.target, rep.crashes);
}

fn bytes_target(target: &'static str, lines: bool, exec: fn(&[u8])) {
    let mutate = move |r: &mut Rng64, m: &mut Vec<u8>, o: &Vec<u8>| {
        if lines && r.gen_range(0..4) != 0 {
            mutate_lines(r, m, o)
        } else {
            mutate_bytes(r, m, o)
        }
    };
    check(fuzz(target, seeds(target), mutate, |d: &Vec<u8>| exec(d), |d| d.clone()));
}

/// Where a trace's records are: the header's JSON (offset, length), each block record's offset,
/// the end record's offset; `None` for what does not parse as a trace this far.
struct Records {
    header: (usize, usize),
    minor: u16,
    blocks: Vec<usize>,
    end: Option<usize>,
}

fn u32_at(d: &[u8], at: usize) -> Option<usize> {
    Some(u32::from_le_bytes(d.get(at..at + 4)?.try_into().ok()?) as usize)
}

fn records(d: &[u8]) -> Option<Records> {
    let minor = u16::from_le_bytes(d.get(10..12)?.try_into().ok()?);
    let len = u32_at(d, 12)?;
    let mut at = 16usize.checked_add(len)?.checked_add(4)?;
    let seq = if minor >= 2 { 8 } else { 0 };
    let mut blocks = Vec::new();
    while d.get(at) == Some(&xlat_trace::format::TAG_BLOCK) {
        blocks.push(at);
        at = at.checked_add(1 + seq + 20)?.checked_add(u32_at(d, at + 1 + seq + 12)?)?;
    }
    let end = (d.get(at) == Some(&xlat_trace::format::TAG_END)).then_some(at);
    Some(Records { header: (16, len), minor, blocks, end })
}

/// An edit of a JSON value that keeps it JSON: a leaf replaced by an edge value (numbers, the
/// empty string, "x", the format's name, null, an empty array or object), a key removed or
/// added, an array element removed or repeated.
fn mutate_json(r: &mut Rng64, v: &mut serde_json::Value) {
    use serde_json::{json, Value};
    // A random path down (a JSON pointer), read first, then the value there edited.
    let mut path = String::new();
    let mut cur: &Value = v;
    loop {
        let step = match cur {
            Value::Object(m) if !m.is_empty() && r.gen_range(0..3) != 0 => {
                let k = m.keys().nth(r.gen_range(0..m.len())).unwrap();
                Some((k.replace('~', "~0").replace('/', "~1"), &m[k]))
            }
            Value::Array(a) if !a.is_empty() && r.gen_range(0..3) != 0 => {
                let i = r.gen_range(0..a.len());
                Some((i.to_string(), &a[i]))
            }
            _ => None,
        };
        match step {
            Some((k, n)) => {
                path.push('/');
                path.push_str(&k);
                cur = n;
            }
            None => break,
        }
    }
    let leaves = [
        json!(0),
        json!(1),
        json!(-1),
        json!(u64::MAX),
        json!(1u64 << 53),
        json!(""),
        json!("x"),
        json!("xlat-trace"),
        Value::Null,
        json!([]),
        json!({}),
        json!(1.5),
    ];
    let leaf = leaves[r.gen_range(0..leaves.len())].clone();
    let how = r.gen_range(0..4);
    let flip = r.gen_bool(0.5);
    let cur = v.pointer_mut(&path).expect("the path just walked");
    match cur {
        Value::Object(m) if how == 0 && !m.is_empty() => {
            let k = m.keys().next().cloned().unwrap();
            m.remove(&k);
        }
        Value::Object(m) if how == 1 => {
            m.insert("zz".into(), leaf);
        }
        Value::Array(a) if how <= 1 && !a.is_empty() => {
            if flip {
                a.pop();
            } else {
                let e = a[0].clone();
                a.push(e);
            }
        }
        Value::Number(n) if how >= 2 && flip => {
            // Off by one: the edits a tester makes to a footer.
            let x = n.as_u64().unwrap_or(0);
            *cur = json!(if how == 2 { x.wrapping_add(1) } else { x.wrapping_sub(1) });
        }
        _ => *cur = leaf,
    }
}

/// The JSON at `at..at+len` of `d` edited, its length (the u32 before it) and checksum (the u32
/// after it) recomputed.
fn edit_json(r: &mut Rng64, d: &mut Vec<u8>, at: usize, len: usize) -> bool {
    let Some(Ok(mut v)) = d.get(at..at + len).map(serde_json::from_slice::<serde_json::Value>) else { return false };
    mutate_json(r, &mut v);
    let json = serde_json::to_vec(&v).unwrap();
    let mut out = d[..at - 4].to_vec();
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
    out.extend_from_slice(d.get(at + len + 4..).unwrap_or(&[]));
    *d = out;
    true
}

/// Edits a checksum would otherwise catch, made with the checksums and lengths recomputed (issue
/// 38): the header's or the end record's JSON edited; a block's decompressed contents edited
/// (bytes flipped or set to edge values) and compressed again. False when `d` does not parse
/// this far (the byte mutations then apply).
fn mutate_records(r: &mut Rng64, d: &mut Vec<u8>) -> bool {
    let Some(rec) = records(d) else { return false };
    match r.gen_range(0..3) {
        0 => edit_json(r, d, rec.header.0, rec.header.1),
        1 => match rec.end {
            Some(at) => match u32_at(d, at + 1) {
                Some(len) => edit_json(r, d, at + 5, len),
                None => false,
            },
            None => false,
        },
        _ => {
            if rec.blocks.is_empty() {
                return false;
            }
            let at = rec.blocks[r.gen_range(0..rec.blocks.len())];
            let seq = if rec.minor >= 2 { 8 } else { 0 };
            let f = at + 1 + seq; // the five u32: accesses, side events, raw and compressed lengths, crc
            let (Some(raw_len), Some(comp_len)) = (u32_at(d, f + 8), u32_at(d, f + 12)) else { return false };
            let Some(comp) = d.get(f + 20..f + 20 + comp_len) else { return false };
            let Ok(mut raw) = zstd::bulk::decompress(comp, raw_len) else { return false };
            for _ in 0..r.gen_range(1..=4) {
                if raw.is_empty() {
                    break;
                }
                let i = r.gen_range(0..raw.len());
                if r.gen_bool(0.5) {
                    raw[i] ^= 1 << r.gen_range(0..8);
                } else {
                    raw[i] = EDGES[r.gen_range(0..EDGES.len())] as u8;
                }
            }
            let comp2 = zstd::bulk::compress(&raw, 1).unwrap();
            let mut h = crc32fast::Hasher::new();
            h.update(&d[at + 1..at + 1 + seq]);
            h.update(&comp2);
            let mut out = d[..f + 8].to_vec();
            out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
            out.extend_from_slice(&(comp2.len() as u32).to_le_bytes());
            out.extend_from_slice(&h.finalize().to_le_bytes());
            out.extend_from_slice(&comp2);
            out.extend_from_slice(&d[f + 20 + comp_len..]);
            *d = out;
            true
        }
    }
}

#[test]
fn fuzz_trace_reader() {
    // A third of the mutations edit records with their checksums and lengths recomputed.
    let records_edited = std::sync::atomic::AtomicU64::new(0);
    let mutate = |r: &mut Rng64, m: &mut Vec<u8>, o: &Vec<u8>| {
        if r.gen_range(0..3) == 0 && mutate_records(r, m) {
            records_edited.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        } else {
            mutate_bytes(r, m, o)
        }
    };
    let rep = fuzz("trace", seeds("trace"), mutate, |d: &Vec<u8>| trace_reader(d), |d| d.clone());
    println!("fuzz trace: {} record edits with checksums recomputed", records_edited.into_inner());
    check(rep);
}

#[test]
fn fuzz_text_reader() {
    bytes_target("text", true, text_reader);
}

#[test]
fn fuzz_config_parser() {
    bytes_target("config", true, config_parser);
}

#[test]
fn fuzz_layout_parser() {
    bytes_target("layout", true, layout_parser);
}

#[test]
fn fuzz_simulator_events() {
    let tiny = std::fs::read_to_string(format!("{CORPUS}/config/tiny.toml")).unwrap();
    let cfgs: Vec<Config> = [&["memory.size=\"64MiB\""][..], &["memory.size=\"64MiB\"", "os.policy=thp"][..]]
        .iter()
        .map(|sets| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            Config::build("tiny", &tiny, &sets, None).unwrap()
        })
        .collect();
    let seeds: Vec<Vec<Event>> = seeds("sim")
        .iter()
        .map(|bytes| {
            let mut rd = TraceReader::new(&bytes[..], "seed").unwrap();
            let (mut b, mut evs) = (Batch::default(), Vec::new());
            while rd.next_batch(&mut b).unwrap() {
                evs.extend(b.events());
            }
            evs
        })
        .collect();
    let save = |evs: &Vec<Event>| {
        let mut b = Batch::default();
        evs.iter().for_each(|e| b.push_event(e.clone()));
        let mut w = xlat_trace::text::TextWriter::new(Vec::new(), &xlat_trace::Header::new("fuzz")).unwrap();
        let _ = w.write_batch(&b);
        w.finish().unwrap()
    };
    let exec = |evs: &Vec<Event>| cfgs.iter().for_each(|c| simulator(c, evs));
    check(fuzz("sim", seeds, |r, m: &mut Vec<Event>, _| mutate_events(r, m), exec, save));
}
