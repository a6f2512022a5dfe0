//! `[prism]`: PRISM's variable-granularity access and dirty bits (seed 004, section 4).

use super::parse::{err, Result};
use serde::{Deserialize, Serialize};

/// Which metadata an `mmdconfig` call sets (seed 004 section 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum MdType {
    Access,
    Dirty,
}

/// One `mmdconfig(addr, len, mdtype, bits)` call, made before the run: `bits` bits of
/// `mdtype` metadata for every 2MB page overlapping `addr .. addr + len`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct MmdConfig {
    pub addr: u64,
    pub len: u64,
    pub mdtype: MdType,
    pub bits: u32,
}

/// PRISM: a metadata registry entry (MRE) per 2MB page whose PDE says it has one, loaded by
/// the walker on a 2MB TLB miss, its sub-page bits set by accesses to the 2MB page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct PrismConfig {
    /// `false`: as if the table were absent.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Access bits of every 2MB page (`mmdconfig(NULL, 0, access, bits)` at the start; 0: no
    /// such call). Seed 004 section 6.1: 32 access and 32 dirty bits fill the 64-bit MRE.
    #[serde(default = "default_bits")]
    pub access_bits: u32,
    /// Dirty bits of every 2MB page (as `access_bits`).
    #[serde(default = "default_bits")]
    pub dirty_bits: u32,
    /// Per-region calls, applied in order after the two above.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mmdconfig: Vec<MmdConfig>,
}

fn default_true() -> bool {
    true
}
fn default_bits() -> u32 {
    32
}

/// Whether `bits` is a granularity the PDE can encode (seed 004 Table 3: 1 .. 32, powers of 2).
pub fn valid_bits(bits: u32) -> bool {
    bits.is_power_of_two() && bits <= 32
}

impl PrismConfig {
    pub(crate) fn validate(&self, c: &str) -> Result<()> {
        for (k, b) in [("access_bits", self.access_bits), ("dirty_bits", self.dirty_bits)] {
            if b != 0 && !valid_bits(b) {
                return err(format!(
                    "config '{c}': prism.{k} = {b} must be 0 (none) or 1, 2, 4, 8, 16 or 32 (PRISM's granularity encodings, Table 3)."
                ));
            }
        }
        for (i, m) in self.mmdconfig.iter().enumerate() {
            if !valid_bits(m.bits) {
                return err(format!(
                    "config '{c}': prism.mmdconfig[{i}].bits = {} must be 1, 2, 4, 8, 16 or 32 (PRISM's granularity encodings, Table 3).",
                    m.bits
                ));
            }
            if m.addr.checked_add(m.len).is_none() {
                return err(format!("config '{c}': prism.mmdconfig[{i}]: addr + len overflows 64 bits."));
            }
        }
        Ok(())
    }
}
