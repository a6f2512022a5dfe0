//! Mosaic layouts (format version 1, `docs/layout-format.md`): per pool (heap, anonymous mmap,
//! file mmap) a size and windows backed by 2MB or 1GB pages; everything else is 4KB. The same
//! files drive the real mosaic allocator.
//!
//! This parser walks the TOML itself, check by check in the order of the reference parser
//! (`python/xlat/layout.py`), so that both accept the same files and reject the others with the
//! same sentence; the shared corpus `tests/layouts/` (run by `tests/layouts.rs` here and by
//! `tests/test_layout_corpus.py` for the Python and the allocator's C parser) holds them to it.
//! The serde derives serve only the configuration's JSON form.

use super::parse::{ConfigError, Result};
use crate::units::{PageSize, Size};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;
use toml::{Table, Value};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct Window {
    pub offset: Size,
    pub length: Size,
    pub page: PageSize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Hash, Default)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    #[serde(default)]
    pub size: Option<Size>,
    #[serde(default)]
    pub windows: Vec<Window>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Hash, Default)]
#[serde(deny_unknown_fields)]
pub struct FilePool {
    #[serde(default)]
    pub size: Option<Size>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    pub version: u32,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub heap: Pool,
    #[serde(default)]
    pub anon: Pool,
    #[serde(default)]
    pub file: FilePool,
}

/// Default pool sizes when a layout omits them (as the allocator's reference parser).
pub const DEFAULT_HEAP: u64 = 32 << 30;
pub const DEFAULT_ANON: u64 = 32 << 30;
pub const DEFAULT_FILE: u64 = 8 << 30;

/// Largest pool, in bytes (16TiB). The simulator's OS model places the three pools 16TiB apart,
/// and the allocator reserves each pool (plus 1GiB of alignment slack) wherever the kernel puts
/// it in the 128TiB (47-bit) user address space: three pools of 16TiB leave the program most of
/// it, three of 64TiB (the old limit) cannot be placed at all. The Python parser
/// (`MAX_POOL_SIZE`) and the allocator (`MOS_MAX_POOL`) enforce the same limit.
pub const MAX_POOL_SIZE: u64 = 16 << 40;
/// Pools are whole multiples of 2MiB (`docs/layout-format.md` says why).
pub const POOL_GRANULE: u64 = 2 << 20;
/// Most windows per pool, 4KB windows included: the allocator holds them all in a fixed table
/// while it validates them (`MOS_MAX_WINDOWS`).
pub const MAX_WINDOWS: usize = 256;

const TOP_KEYS: [&str; 6] = ["version", "name", "description", "heap", "anon", "file"];
const POOL_KEYS: [&str; 2] = ["size", "windows"];
const WINDOW_KEYS: [&str; 3] = ["offset", "length", "page"];
const NOT_A_SIZE: &str = "is not a size (use bytes or a number with KiB, MiB, GiB or TiB).";

fn fail<T>(msg: String) -> Result<T> {
    Err(ConfigError(msg))
}

/// A TOML value as error messages show it: integers as written, strings in single quotes
/// (backslash, quote and control characters escaped, so that a message stays on one line),
/// anything else by its type. `_show` in `python/xlat/layout.py` is the same rule.
fn show(v: &Value) -> String {
    match v {
        Value::Boolean(_) => "a boolean".into(),
        Value::Integer(i) => i.to_string(),
        Value::String(s) => show_str(s),
        Value::Float(_) => "a float".into(),
        Value::Array(_) => "an array".into(),
        Value::Table(_) => "a table".into(),
        Value::Datetime(_) => "a date-time".into(),
    }
}

fn show_str(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Shortest exact binary-suffixed spelling of `n` bytes (`64MiB`, `4097`), as `format_size` in
/// `layout.py`.
pub fn format_size(n: u64) -> String {
    for (unit, name) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n != 0 && n.is_multiple_of(1u64 << unit) {
            return format!("{}{name}", n >> unit);
        }
    }
    n.to_string()
}

/// Bytes of a size unit (case-insensitive; `KB`, `MB`, ... are binary too).
fn unit_bytes(unit: &str) -> Option<u64> {
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return None,
    };
    Some(1 << shift)
}

/// A size: a non-negative integer, or a string of ASCII digits, optional spaces and an optional
/// unit, with nothing before or after; it must fit in 64 bits. `place` names the field.
fn parse_size(v: &Value, place: &str) -> Result<u64> {
    let s = match v {
        Value::Integer(i) if *i < 0 => return fail(format!("{place} must not be negative, but is {i}.")),
        Value::Integer(i) => return Ok(*i as u64),
        Value::String(s) => s,
        other => {
            return fail(format!("{place} must be a number of bytes or a string like \"2MiB\", not {}.", show(other)))
        }
    };
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let unit = s[digits..].trim_start_matches(' ');
    let mult = match unit.bytes().all(|b| b.is_ascii_alphabetic()) {
        true if digits > 0 => unit_bytes(unit),
        _ => None,
    };
    let Some(mult) = mult else {
        return fail(format!("{place} {} {NOT_A_SIZE}", show_str(s)));
    };
    s[..digits]
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| ConfigError(format!("{place} {} does not fit in 64 bits.", show_str(s))))
}

/// The first key of `t` not in `allowed`, in sorted order.
fn unknown_key<'a>(t: &'a Table, allowed: &[&str]) -> Option<&'a String> {
    t.keys().filter(|k| !allowed.contains(&k.as_str())).min()
}

/// Parse TOML text as a layout file does: TOML 1.0, no byte-order mark; one sentence on error.
fn parse_text(what: &str, text: &str) -> Result<Table> {
    if text.starts_with('\u{feff}') {
        return fail(format!("{what}: not valid TOML (the file starts with a byte-order mark)."));
    }
    text.parse::<Table>().map_err(|e| {
        let msg = e.message().trim().trim_end_matches('.').replace('\n', "; ");
        let at = e
            .span()
            .map(|s| {
                let before = &text[..s.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                format!(" (at line {line}, column {column})")
            })
            .unwrap_or_default();
        ConfigError(format!("{what}: not valid TOML ({msg}{at})."))
    })
}

fn parse_window(what: &str, pool: &str, i: usize, raw: &Value) -> Result<Window> {
    let place = format!("{what}: pool '{pool}' window {i}");
    let Value::Table(t) = raw else {
        return fail(format!(r#"{place} must be a table like {{ offset = "0", length = "2MiB", page = "2MB" }}."#));
    };
    if let Some(k) = unknown_key(t, &WINDOW_KEYS) {
        return fail(format!("{place} has unknown key {} (allowed: offset, length, page).", show_str(k)));
    }
    for key in WINDOW_KEYS {
        if !t.contains_key(key) {
            return fail(format!("{place} is missing '{key}'."));
        }
    }
    let page = match &t["page"] {
        Value::String(s) => match PageSize::ALL.into_iter().find(|p| p.name() == s) {
            Some(p) => p,
            None => return fail(format!(r#"{place}: page {} is not one of "4KB", "2MB", "1GB"."#, show_str(s))),
        },
        other => {
            return fail(format!(r#"{place}: page must be a string ("4KB", "2MB" or "1GB"), not {}."#, show(other)))
        }
    };
    let offset = parse_size(&t["offset"], &format!("{place}: offset"))?;
    let length = parse_size(&t["length"], &format!("{place}: length"))?;
    if length == 0 {
        return fail(format!("{place}: length {} must be greater than zero.", show(&t["length"])));
    }
    for (field, n) in [("offset", offset), ("length", length)] {
        if n % page.bytes() != 0 {
            return fail(format!(
                "{place}: {field} {} ({n} bytes) is not a multiple of the {} page size.",
                show(&t[field]),
                page.name()
            ));
        }
    }
    Ok(Window { offset: Size(offset), length: Size(length), page })
}

/// The rules on a pool's windows as a whole: inside the pool, no overlaps, not too many.
fn check_windows(what: &str, pool: &str, size: u64, windows: &[Window]) -> Result<()> {
    for (i, w) in windows.iter().enumerate() {
        if w.offset.0.checked_add(w.length.0).is_none_or(|end| end > size) {
            return fail(format!(
                "{what}: pool '{pool}' window {i}: offset {} plus length {} ends beyond the pool size {}.",
                format_size(w.offset.0),
                format_size(w.length.0),
                format_size(size)
            ));
        }
    }
    let mut order: Vec<usize> = (0..windows.len()).collect();
    order.sort_by_key(|&k| windows[k].offset.0); // stable, as Python's sorted()
    for pair in order.windows(2) {
        let (a, b) = (&windows[pair[0]], &windows[pair[1]]);
        if a.offset.0 + a.length.0 > b.offset.0 {
            let (lo, hi) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
            let (wl, wh) = (&windows[lo], &windows[hi]);
            return fail(format!(
                "{what}: pool '{pool}' window {hi} (offset {}, length {}) overlaps window {lo} (offset {}, length {}).",
                format_size(wh.offset.0),
                format_size(wh.length.0),
                format_size(wl.offset.0),
                format_size(wl.length.0)
            ));
        }
    }
    if windows.len() > MAX_WINDOWS {
        return fail(format!(
            "{what}: pool '{pool}' has {} windows, more than the {MAX_WINDOWS} allowed.",
            windows.len()
        ));
    }
    Ok(())
}

/// A pool's size (None: not given, the default) and windows.
fn parse_pool(what: &str, name: &str, raw: Option<&Value>, default: u64) -> Result<(Option<Size>, Vec<Window>)> {
    let Some(raw) = raw else { return Ok((None, Vec::new())) };
    let Value::Table(t) = raw else {
        return fail(format!("{what}: pool '{name}' must be a table with 'size' and optionally 'windows'."));
    };
    if let Some(k) = unknown_key(t, &POOL_KEYS) {
        return fail(format!("{what}: pool '{name}' has unknown key {} (allowed: size, windows).", show_str(k)));
    }
    let size = t.get("size").map(|v| parse_size(v, &format!("{what}: pool '{name}' size"))).transpose()?;
    let bytes = size.unwrap_or(default);
    let shown = || format!("{} ({bytes} bytes)", t.get("size").map_or_else(|| bytes.to_string(), show));
    if bytes == 0 || bytes % POOL_GRANULE != 0 {
        return fail(format!("{what}: pool '{name}' size {} is not a positive multiple of 2MiB.", shown()));
    }
    if bytes > MAX_POOL_SIZE {
        return fail(format!("{what}: pool '{name}' size {} is larger than {}.", shown(), format_size(MAX_POOL_SIZE)));
    }
    if name == "file" && t.contains_key("windows") {
        return fail(format!("{what}: pool 'file' cannot have windows: file-backed mappings use 4KB pages only."));
    }
    let windows = match t.get("windows") {
        None => Vec::new(),
        Some(Value::Array(ws)) => {
            ws.iter().enumerate().map(|(i, w)| parse_window(what, name, i, w)).collect::<Result<Vec<_>>>()?
        }
        Some(_) => return fail(format!("{what}: pool '{name}' windows must be an array of tables.")),
    };
    check_windows(what, name, bytes, &windows)?;
    Ok((size.map(Size), windows))
}

impl Layout {
    /// Read and check the layout file at `path`; errors name the file.
    pub fn from_file(path: &Path) -> Result<Layout> {
        let p = path.display();
        let bytes = std::fs::read(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ConfigError(format!("layout file '{p}' does not exist.")),
            _ => ConfigError(format!("layout file '{p}' cannot be read ({e}).")),
        })?;
        let text =
            String::from_utf8(bytes).map_err(|e| ConfigError(format!("layout file '{p}' cannot be read ({e}).")))?;
        Layout::from_toml(&p.to_string(), &text)
    }

    /// Parse and check layout text; `what` (the file) begins every error sentence.
    pub fn from_toml(what: &str, text: &str) -> Result<Layout> {
        Layout::from_table(what, &parse_text(what, text)?)
    }

    /// Check a layout already read as TOML (a configuration's `[layout]` table).
    pub fn from_table(what: &str, t: &Table) -> Result<Layout> {
        if let Some(k) = unknown_key(t, &TOP_KEYS) {
            let kind = if t[k].is_table() { "pool" } else { "key" };
            return fail(format!(
                "{what}: unknown {kind} {} (pools are heap, anon and file; other keys are version, name and description).",
                show_str(k)
            ));
        }
        let version = match t.get("version") {
            None => return fail(format!("{what}: 'version' is missing (this reader understands version = 1).")),
            Some(Value::Integer(v)) => *v,
            Some(other) => return fail(format!("{what}: version must be the integer 1, not {}.", show(other))),
        };
        if version != 1 {
            return fail(format!("{what}: version {version} is not supported (this reader understands 1)."));
        }
        let mut text = [None, None];
        for (slot, key) in text.iter_mut().zip(["name", "description"]) {
            match t.get(key) {
                None => {}
                Some(Value::String(s)) => *slot = Some(s.clone()),
                Some(other) => return fail(format!("{what}: '{key}' must be a string, not {}.", show(other))),
            }
        }
        let [name, description] = text;
        let (heap_size, heap_windows) = parse_pool(what, "heap", t.get("heap"), DEFAULT_HEAP)?;
        let (anon_size, anon_windows) = parse_pool(what, "anon", t.get("anon"), DEFAULT_ANON)?;
        let (file_size, _) = parse_pool(what, "file", t.get("file"), DEFAULT_FILE)?;
        Ok(Layout {
            version: 1,
            name,
            description,
            heap: Pool { size: heap_size, windows: heap_windows },
            anon: Pool { size: anon_size, windows: anon_windows },
            file: FilePool { size: file_size },
        })
    }

    pub fn heap_size(&self) -> u64 {
        self.heap.size.map_or(DEFAULT_HEAP, |s| s.0)
    }
    pub fn anon_size(&self) -> u64 {
        self.anon.size.map_or(DEFAULT_ANON, |s| s.0)
    }
    pub fn file_size(&self) -> u64 {
        self.file.size.map_or(DEFAULT_FILE, |s| s.0)
    }

    /// Check the rules on a layout built some other way than from TOML (the file's spellings are
    /// gone, so sizes are shown in bytes).
    pub fn validate(&self, what: &str) -> Result<()> {
        if self.version != 1 {
            return fail(format!("{what}: version {} is not supported (this reader understands 1).", self.version));
        }
        for (pool, size, windows) in [
            ("heap", self.heap_size(), &self.heap.windows[..]),
            ("anon", self.anon_size(), &self.anon.windows[..]),
            ("file", self.file_size(), &[][..]),
        ] {
            if size == 0 || size % POOL_GRANULE != 0 || size > MAX_POOL_SIZE {
                return fail(format!(
                    "{what}: pool '{pool}' size {size} must be a positive multiple of 2MiB, at most {}.",
                    format_size(MAX_POOL_SIZE)
                ));
            }
            for (i, w) in windows.iter().enumerate() {
                let p = w.page.bytes();
                if w.length.0 == 0 || w.offset.0 % p != 0 || w.length.0 % p != 0 {
                    return fail(format!(
                        "{what}: pool '{pool}' window {i}: offset {} and length {} must be multiples of the {} page size, and the length positive.",
                        w.offset.0,
                        w.length.0,
                        w.page.name()
                    ));
                }
            }
            check_windows(what, pool, size, windows)?;
        }
        Ok(())
    }

    /// Page size at `offset` of the heap (`anon = false`) or anon pool.
    pub fn page_at(&self, anon: bool, offset: u64) -> PageSize {
        let ws = if anon { &self.anon.windows } else { &self.heap.windows };
        ws.iter()
            .find(|w| w.offset.0 <= offset && offset < w.offset.0 + w.length.0)
            .map_or(PageSize::Size4K, |w| w.page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIXED: &str = r#"
version = 1
name = "mixed"
[heap]
size = "4GiB"
windows = [ { offset = "0", length = "1GiB", page = "1GB" }, { offset = "1GiB", length = "64MiB", page = "2MB" } ]
[anon]
size = "8GiB"
windows = [ { offset = "0", length = "512MiB", page = "2MB" } ]
[file]
size = "1GiB"
"#;

    #[test]
    fn parses_the_documented_example() {
        let l = Layout::from_toml("mixed.toml", MIXED).unwrap();
        assert_eq!(l.heap_size(), 4 << 30);
        assert_eq!(l.page_at(false, 5 << 20), PageSize::Size1G);
        assert_eq!(l.page_at(false, (1 << 30) + (63 << 20)), PageSize::Size2M);
        assert_eq!(l.page_at(false, (1 << 30) + (64 << 20)), PageSize::Size4K);
        assert_eq!(l.page_at(true, 0), PageSize::Size2M);
    }

    #[test]
    fn rejects_bad_layouts_in_one_sentence() {
        let cases = [
            (
                MIXED.replace("\"64MiB\"", "\"65MiB\""),
                "l.toml: pool 'heap' window 1: length '65MiB' (68157440 bytes) is not a multiple of the 2MB page size.",
            ),
            (
                MIXED.replace("size = \"1GiB\"", "size = \"1GiB\"\nwindows = []"),
                "l.toml: pool 'file' cannot have windows: file-backed mappings use 4KB pages only.",
            ),
            (
                MIXED.replace("offset = \"1GiB\"", "offset = \"512MiB\""),
                "l.toml: pool 'heap' window 1 (offset 512MiB, length 64MiB) overlaps window 0 (offset 0, length 1GiB).",
            ),
            (
                MIXED.replace("version = 1", "version = 2"),
                "l.toml: version 2 is not supported (this reader understands 1).",
            ),
            (
                MIXED.replace("\"8GiB\"", "\"8GiB\"\nbogus = 1"),
                "l.toml: pool 'anon' has unknown key 'bogus' (allowed: size, windows).",
            ),
            (
                MIXED.replace("page = \"2MB\" } ]", "page = \"4MB\" } ]"),
                r#"l.toml: pool 'heap' window 1: page '4MB' is not one of "4KB", "2MB", "1GB"."#,
            ),
            (
                MIXED.replace("\"8GiB\"", "\"17TiB\""),
                "l.toml: pool 'anon' size '17TiB' (18691697672192 bytes) is larger than 16TiB.",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(Layout::from_toml("l.toml", &text).unwrap_err().0, want);
        }
    }

    #[test]
    fn values_are_shown_on_one_line() {
        assert_eq!(show_str("a\tb\\c'd\u{0}\u{2028}é"), r"'a\tb\\c\'d\x00\u2028é'");
        assert_eq!(show(&Value::Float(1.0)), "a float");
        assert_eq!(format_size(0), "0");
        assert_eq!(format_size(3 << 20), "3MiB");
        assert_eq!(format_size(MAX_POOL_SIZE), "16TiB");
    }

    #[test]
    fn validate_checks_layouts_built_in_code() {
        let mut l = Layout::from_toml("l", MIXED).unwrap();
        assert_eq!(l.validate("l"), Ok(()));
        l.anon.size = Some(Size(MAX_POOL_SIZE + (2 << 20)));
        assert!(l.validate("l").unwrap_err().0.contains("at most 16TiB"));
        l.anon.size = None;
        l.heap.windows.push(l.heap.windows[0].clone());
        assert!(l.validate("l").unwrap_err().0.contains("window 2 (offset 0, length 1GiB) overlaps window 0"));
    }
}
