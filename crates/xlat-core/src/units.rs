//! Units every part of the simulator speaks: page sizes and byte counts (with their TOML form).

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// A byte count: an integer, or a string such as `"64GiB"` (KB/MB/GB are binary units too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Hash)]
#[serde(transparent)]
pub struct Size(pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Size, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a non-negative byte count (an integer or a string like \"4GiB\")")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<Size, E> {
                Ok(Size(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<Size, E> {
                if v < 0 {
                    return Err(E::custom(format!("size {v} is negative")));
                }
                Ok(Size(v as u64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Size, E> {
                xlat_trace::workload::parse_size(v).map(Size).ok_or_else(|| {
                    E::custom(format!(
                        "'{v}' is not a size (a non-negative integer with an optional unit B, KiB, MiB, GiB, TiB)"
                    ))
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// Page sizes of x86-64: leaves at PT (4KB), PD (2MB) and PDPT (1GB) level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PageSize {
    #[serde(rename = "4KB")]
    Size4K = 0,
    #[serde(rename = "2MB")]
    Size2M = 1,
    #[serde(rename = "1GB")]
    Size1G = 2,
}

impl PageSize {
    pub const ALL: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];
    #[inline(always)]
    pub fn shift(self) -> u32 {
        // 12, 21, 30: arithmetic rather than a match (no table load in the hot loop).
        12 + 9 * self as u32
    }
    #[inline(always)]
    pub fn bytes(self) -> u64 {
        1 << self.shift()
    }
    /// Page-table level of the leaf (1 = PT, 2 = PD, 3 = PDPT).
    #[inline(always)]
    pub fn leaf_level(self) -> usize {
        self as usize + 1
    }
    pub fn name(self) -> &'static str {
        match self {
            PageSize::Size4K => "4KB",
            PageSize::Size2M => "2MB",
            PageSize::Size1G => "1GB",
        }
    }
    #[inline(always)]
    pub fn from_index(i: usize) -> PageSize {
        PageSize::ALL[i]
    }
}
