//! Mosaic layouts (format version 1, `docs/layout-format.md`): per pool (heap, anonymous mmap,
//! file mmap) a size and windows backed by 2MB or 1GB pages; everything else is 4KB. The same
//! files drive the real mosaic allocator; the rules here mirror its reference parser.

use super::parse::{from_value, parse_toml, ConfigError, Result};
use crate::units::{PageSize, Size};
use serde::{Deserialize, Serialize};

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

impl Layout {
    pub fn from_toml(what: &str, text: &str) -> Result<Layout> {
        let table = parse_toml(what, text)?;
        let l: Layout = from_value(what, toml::Value::Table(table))?;
        l.validate(what)?;
        Ok(l)
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

    pub fn validate(&self, what: &str) -> Result<()> {
        let e = |m: String| Err(ConfigError(format!("{what}: {m}")));
        if self.version != 1 {
            return e(format!("version = {} is not supported (only 1).", self.version));
        }
        for (pool, size, windows) in [
            ("heap", self.heap_size(), &self.heap.windows),
            ("anon", self.anon_size(), &self.anon.windows),
            ("file", self.file_size(), &Vec::new()),
        ] {
            if size == 0 || size % (2 << 20) != 0 || size > (64u64 << 40) {
                return e(format!("pool '{pool}': size {size} must be a positive multiple of 2MiB, at most 64TiB."));
            }
            if windows.len() > 256 {
                return e(format!("pool '{pool}' has {} windows; at most 256.", windows.len()));
            }
            let mut spans: Vec<(u64, u64, usize)> = Vec::new();
            for (i, w) in windows.iter().enumerate() {
                let p = w.page.bytes();
                if w.length.0 == 0 {
                    return e(format!("pool '{pool}' window {i}: length is 0."));
                }
                if w.offset.0 % p != 0 {
                    return e(format!(
                        "pool '{pool}' window {i}: offset {} is not a multiple of the {} page size.",
                        w.offset.0,
                        w.page.name()
                    ));
                }
                if w.length.0 % p != 0 {
                    return e(format!(
                        "pool '{pool}' window {i}: length {} is not a multiple of the {} page size.",
                        w.length.0,
                        w.page.name()
                    ));
                }
                let end = w.offset.0.saturating_add(w.length.0);
                if end > size {
                    return e(format!(
                        "pool '{pool}' window {i}: offset + length = {end} exceeds the pool size {size}."
                    ));
                }
                if let Some(&(_, _, j)) = spans.iter().find(|&&(s, t, _)| w.offset.0 < t && s < end) {
                    return e(format!("pool '{pool}' window {i} overlaps window {j}."));
                }
                spans.push((w.offset.0, end, i));
            }
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
                "window 1: length 68157440 is not a multiple of the 2MB page size",
            ),
            (MIXED.replace("size = \"1GiB\"", "size = \"1GiB\"\nwindows = []"), "unknown field `windows`"),
            (MIXED.replace("offset = \"1GiB\"", "offset = \"512MiB\""), "window 1 overlaps window 0"),
            (MIXED.replace("version = 1", "version = 2"), "version = 2"),
            (MIXED.replace("\"8GiB\"", "\"8GiB\"\nbogus = 1"), "unknown field `bogus`"),
            (MIXED.replace("page = \"2MB\" } ]", "page = \"4MB\" } ]"), "4MB"),
        ];
        for (text, want) in cases {
            let e = Layout::from_toml("l.toml", &text).unwrap_err().0;
            assert!(e.contains(want), "{e} lacks {want}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
