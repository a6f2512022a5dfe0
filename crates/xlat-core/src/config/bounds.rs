//! Bounds on every number the time and energy estimates add up (issue 24, items 3 and 4): each
//! latency and cycle count (any field named `*latency*` or `*cycles*`, wherever it is) at most
//! [`MAX_CYCLES`], each energy and power at most [`MAX_ENERGY`], `sim.base_cpi` finite and at
//! most [`MAX_CPI`]. With them the `u64` cycle counters cannot wrap: a walk adds at most a few
//! dozen latencies (5 levels, each through the caches to memory, plus the walker's own), so
//! `walker.cycles` needs more than 2^64 / (64 * 100,000), about 2.9 * 10^12 walks, to overflow —
//! days of simulation at tens of millions of accesses a second; and the `f64` estimates stay
//! finite (no `inf` or `null` in a result).

use serde_json::Value;

/// Cycles: 25 us at 4 GHz, far above any memory's latency (CXL and NVM take a few thousand).
pub const MAX_CYCLES: u64 = 100_000;
/// Picojoules per access, or milliwatts: a microjoule, a kilowatt.
pub const MAX_ENERGY: f64 = 1e6;
/// Cycles per instruction of the time estimate.
pub const MAX_CPI: f64 = 10_000.0;

/// The first field of `v` (a configuration as JSON) out of bounds, as one sentence's ending.
pub(super) fn check(v: &Value, path: &str) -> Result<(), String> {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                check_field(k, x, &p)?;
                check(x, &p)?;
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                check(x, &format!("{path}[{i}]"))?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn check_field(key: &str, x: &Value, path: &str) -> Result<(), String> {
    let Some(n) = x.as_f64() else {
        return Ok(());
    };
    if key.contains("latency") || key.contains("cycles") {
        if x.as_u64().is_none_or(|c| c > MAX_CYCLES) {
            return Err(format!("{path} = {x} must be a whole number of cycles of at most {MAX_CYCLES}"));
        }
    } else if key.contains("energy") || key.contains("power") {
        if !(0.0..=MAX_ENERGY).contains(&n) {
            return Err(format!("{path} = {x} must be between 0 and {MAX_ENERGY}"));
        }
    } else if key == "base_cpi" && !(0.0..=MAX_CPI).contains(&n) {
        return Err(format!("{path} = {x} must be between 0 and {MAX_CPI}"));
    }
    Ok(())
}
