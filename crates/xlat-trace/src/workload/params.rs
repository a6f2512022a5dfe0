//! Workload specifications: `workload:NAME?key=value&key=value`.

use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// How a parameter's value is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// Bytes, with optional binary suffix (K, KB, KiB, M, ..., T): all mean powers of 1024.
    Size,
    Int,
    Float,
    Choice(&'static [&'static str]),
}

/// A workload's name, description and parameters (besides `accesses` and `seed`).
#[derive(Debug, Clone, Copy)]
pub struct WorkloadInfo {
    pub name: &'static str,
    pub help: &'static str,
    pub params: &'static [ParamSpec],
}

#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
    pub default: &'static str,
    pub help: &'static str,
}

/// Parameters every workload takes.
pub const COMMON: &[ParamSpec] = &[
    ParamSpec { name: "accesses", kind: ParamKind::Int, default: "1000000", help: "memory accesses to emit" },
    ParamSpec { name: "seed", kind: ParamKind::Int, default: "1", help: "random seed (same seed, same trace)" },
];

/// Parse a byte size such as `8GiB`, `512M`, `4096`.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

/// Parsed parameter values, with defaults filled in.
#[derive(Debug, Clone)]
pub struct Params {
    pub spec: String,
    values: BTreeMap<&'static str, String>,
}

impl Params {
    pub fn parse(spec: &str, name: &str, own: &[ParamSpec], query: &str) -> Result<Params> {
        let err = |detail: String| Error::Workload { spec: spec.to_string(), detail };
        let all: Vec<&ParamSpec> = own.iter().chain(COMMON.iter()).collect();
        let mut values = BTreeMap::new();
        for p in &all {
            values.insert(p.name, p.default.to_string());
        }
        let mut seen = std::collections::HashSet::new();
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| err(format!("'{kv}' is not key=value")))?;
            let p = all.iter().find(|p| p.name == k).ok_or_else(|| {
                let names: Vec<_> = all.iter().map(|p| p.name).collect();
                err(format!("{name} has no parameter '{k}' (it takes {})", names.join(", ")))
            })?;
            if !seen.insert(k) {
                return Err(err(format!("parameter '{k}' is given twice")));
            }
            values.insert(p.name, v.to_string());
        }
        for p in &all {
            let v = &values[p.name];
            let ok = match p.kind {
                ParamKind::Size => parse_size(v).is_some_and(|x| x > 0),
                ParamKind::Int => v.parse::<u64>().is_ok(),
                ParamKind::Float => v.parse::<f64>().is_ok_and(|x| x.is_finite()),
                ParamKind::Choice(c) => c.contains(&v.as_str()),
            };
            if !ok {
                let want = match p.kind {
                    ParamKind::Size => "a positive size such as 4096, 64MiB or 8GiB".to_string(),
                    ParamKind::Int => "a non-negative integer".to_string(),
                    ParamKind::Float => "a number".to_string(),
                    ParamKind::Choice(c) => format!("one of {}", c.join(", ")),
                };
                return Err(err(format!("{name} parameter {}={v} is not {want}", p.name)));
            }
        }
        Ok(Params { spec: spec.to_string(), values })
    }

    pub fn size(&self, k: &str) -> u64 {
        parse_size(&self.values[k]).expect("validated")
    }
    pub fn int(&self, k: &str) -> u64 {
        self.values[k].parse().expect("validated")
    }
    pub fn float(&self, k: &str) -> f64 {
        self.values[k].parse().expect("validated")
    }
    pub fn str(&self, k: &str) -> &str {
        &self.values[k]
    }
    /// An error about this spec.
    pub fn error(&self, detail: impl Into<String>) -> Error {
        Error::Workload { spec: self.spec.clone(), detail: detail.into() }
    }
    /// The canonical spec with every parameter spelled out, in name order.
    pub fn canonical(&self, name: &str) -> String {
        let q: Vec<String> = self.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("workload:{name}?{}", q.join("&"))
    }
    pub fn to_json(&self) -> serde_json::Map<String, serde_json::Value> {
        self.values.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.clone()))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("8GiB"), Some(8 << 30));
        assert_eq!(parse_size("8G"), Some(8 << 30));
        assert_eq!(parse_size("64MB"), Some(64 << 20));
        assert_eq!(parse_size("1.5G"), None);
        assert_eq!(parse_size("GiB"), None);
        assert_eq!(parse_size("99999999999T"), None);
    }
}
