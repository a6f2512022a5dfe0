//! The shared layout corpus (`tests/layouts/`, its README says how files are annotated) through
//! the simulator's layout parser. `tests/test_layout_corpus.py` runs the same files through the
//! Python parser and the allocator's C parser, so the three agree file by file: every good file
//! is accepted and means what its `# expect` lines say, every bad file is rejected with the
//! sentence its `# error:` line gives.

use std::path::{Path, PathBuf};
use xlat_core::layout::{Layout, MAX_POOL_SIZE, MAX_WINDOWS};
use xlat_core::units::PageSize;
use xlat_core::{presets, Config};

/// What every parser says about an empty file, which has no room for annotations.
const EMPTY_ERROR: &str = "'version' is missing (this reader understands version = 1).";

fn corpus(kind: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root");
    let dir = root.join("tests/layouts").join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// The values of the leading `# KEY...` comment lines of a corpus file.
fn annotations(path: &Path, key: &str) -> Vec<String> {
    let bytes = std::fs::read(path).expect("corpus file");
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let prefix = format!("# {key}");
    text.lines()
        .take_while(|l| l.starts_with("# "))
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_string))
        .collect()
}

fn ann_bytes(s: &str) -> u64 {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let shift = match &s[digits..] {
        "" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        "TiB" => 40,
        u => panic!("bad unit {u:?} in a corpus annotation"),
    };
    s[..digits].parse::<u64>().expect("annotation number") << shift
}

type Pools = Vec<(String, u64, Vec<(u64, u64, PageSize)>)>;

/// pool -> size and windows (offset, length, page) in the order written, from `# expect` lines.
fn expected(path: &Path) -> Pools {
    let mut pools: Pools = annotations(path, "expect ")
        .iter()
        .map(|line| {
            let mut parts = line.split_whitespace();
            let name = parts.next().expect("pool name").to_string();
            let size = ann_bytes(parts.next().expect("pool size"));
            let windows = parts
                .map(|w| {
                    let f: Vec<&str> = w.split(':').collect();
                    let page = PageSize::ALL.into_iter().find(|p| p.name() == f[2]).expect("page name");
                    (ann_bytes(f[0]), ann_bytes(f[1]), page)
                })
                .collect();
            (name, size, windows)
        })
        .collect();
    pools.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(pools.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(), ["anon", "file", "heap"], "{path:?}");
    pools
}

fn meaning(l: &Layout) -> Pools {
    let ws = |w: &[xlat_core::layout::Window]| w.iter().map(|w| (w.offset.0, w.length.0, w.page)).collect();
    vec![
        ("anon".into(), l.anon_size(), ws(&l.anon.windows)),
        ("file".into(), l.file_size(), Vec::new()),
        ("heap".into(), l.heap_size(), ws(&l.heap.windows)),
    ]
}

fn expected_error(path: &Path) -> String {
    if std::fs::metadata(path).expect("corpus file").len() == 0 {
        return EMPTY_ERROR.to_string();
    }
    let errors = annotations(path, "error: ");
    assert_eq!(errors.len(), 1, "{path:?} needs exactly one '# error:' line");
    errors[0].clone()
}

/// Whether `msg` is the sentence the corpus expects for `path`.
fn matches(path: &Path, want: &str, msg: &str) -> bool {
    let one_sentence = msg.ends_with('.') && msg.lines().count() == 1;
    // TOML syntax (the detail is the TOML library's) and unreadable files: the start only
    let exact = if want.ends_with('(') {
        msg.contains(want) && msg.contains(&path.display().to_string())
    } else {
        msg == format!("{}: {want}", path.display())
    };
    one_sentence && exact
}

#[test]
fn good_layouts_are_accepted_and_mean_what_they_say() {
    let good = corpus("good");
    assert!(good.len() >= 30, "the corpus has {} good files", good.len());
    let mut wrong = Vec::new();
    for path in &good {
        match Layout::from_file(path) {
            Ok(l) if meaning(&l) == expected(path) => {}
            Ok(l) => wrong.push(format!("{}: read as {:?}", path.display(), meaning(&l))),
            Err(e) => wrong.push(format!("{}: rejected: {e}", path.display())),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn bad_layouts_are_rejected_with_the_shared_sentence() {
    let bad = corpus("bad");
    assert!(bad.len() >= 100, "the corpus has {} bad files", bad.len());
    let mut wrong = Vec::new();
    for path in &bad {
        let want = expected_error(path);
        match Layout::from_file(path) {
            Ok(_) => wrong.push(format!("{}: accepted", path.display())),
            Err(e) if matches(path, &want, &e.0) => {}
            Err(e) => wrong.push(format!("{}:\n  said {}\n  want {want}", path.display(), e.0)),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A configuration's `[layout]` table goes through the same parser, with the same sentences.
#[test]
fn layouts_inside_a_configuration_are_judged_alike() {
    let preset: toml::Table = presets::get("skylake").expect("preset").parse().expect("preset TOML");
    let mut judged = 0;
    for path in corpus("good").iter().chain(&corpus("bad")) {
        let Some(table) = std::fs::read_to_string(path).ok().and_then(|t| t.parse::<toml::Table>().ok()) else {
            continue; // not TOML: nothing to put in a configuration
        };
        if path.to_string_lossy().contains("byte-order-mark") {
            continue; // the mark is a property of a file, not of its table
        }
        let mut cfg = preset.clone();
        cfg.insert("layout".into(), toml::Value::Table(table));
        let text = toml::to_string(&cfg).expect("serialise");
        let result = Config::from_toml("c.toml", &text, &[]);
        let good = path.parent().is_some_and(|d| d.ends_with("good"));
        match (good, result) {
            (true, Ok(c)) => assert_eq!(meaning(c.layout.as_ref().expect("layout")), expected(path), "{path:?}"),
            (true, Err(e)) => panic!("{}: rejected in a configuration: {e}", path.display()),
            (false, Ok(_)) => panic!("{}: accepted in a configuration", path.display()),
            (false, Err(e)) => assert_eq!(e.0, format!("c.toml [layout]: {}", expected_error(path)), "{path:?}"),
        }
        judged += 1;
    }
    assert!(judged >= 100, "only {judged} corpus files judged");
}

#[test]
fn limits_match_the_other_parsers() {
    // python/xlat/layout.py MAX_POOL_SIZE, MAX_WINDOWS; native/mosaic/mosaic.h MOS_MAX_POOL, MOS_MAX_WINDOWS
    assert_eq!(MAX_POOL_SIZE, 16 << 40);
    assert_eq!(MAX_WINDOWS, 256);
}
