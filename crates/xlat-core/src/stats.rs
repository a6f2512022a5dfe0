//! Counters: every component reports its own through [`Counters`] into one flat table of
//! namespaced names (`tlb.stlb.hits`, `os.page_faults`, `walker.loads.pd.L2`) that
//! `docs/simulator.md` documents. A component names its counters with `format_args!`, which a
//! [`Sink`] formats only when it keeps names: a time-series sample takes the values alone, in the
//! order the components report them, with no string built and nothing serialised.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Where counters go.
pub trait Sink {
    fn put(&mut self, name: fmt::Arguments<'_>, value: u64);
    /// A level rather than a count: a value of the state now (frames in use, entries held,
    /// ways enabled). A window of the run (after a warm-up) reports a gauge as it is at the
    /// window's end, and every other counter as its increase over the window.
    fn gauge(&mut self, name: fmt::Arguments<'_>, value: u64) {
        self.put(name, value)
    }
}

/// A component with counters.
pub trait Counters {
    /// Report every counter, in an order that depends only on the configuration (the same
    /// names in the same order at every call).
    fn counters(&self, out: &mut dyn Sink);
}

/// A sink that keeps names and values, sorted by name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Named(pub BTreeMap<String, u64>);

impl Sink for Named {
    fn put(&mut self, name: fmt::Arguments<'_>, value: u64) {
        let name = match name.as_str() {
            Some(s) => s.to_string(),
            None => name.to_string(),
        };
        let old = self.0.insert(name, value);
        debug_assert!(old.is_none(), "a counter reported twice");
    }
}

/// A sink that keeps the values alone, in report order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Values(pub Vec<u64>);

impl Sink for Values {
    fn put(&mut self, _: fmt::Arguments<'_>, value: u64) {
        self.0.push(value);
    }
}

/// A sink that puts every name under `prefix.` into another sink.
pub struct Prefixed<'a> {
    pub prefix: &'a str,
    pub inner: &'a mut dyn Sink,
}

impl Sink for Prefixed<'_> {
    fn put(&mut self, name: fmt::Arguments<'_>, value: u64) {
        self.inner.put(format_args!("{}.{}", self.prefix, name), value);
    }
    fn gauge(&mut self, name: fmt::Arguments<'_>, value: u64) {
        self.inner.gauge(format_args!("{}.{}", self.prefix, name), value);
    }
}

/// A sink that keeps the names of the gauges alone ([`Sink::gauge`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GaugeNames(pub BTreeSet<String>);

impl Sink for GaugeNames {
    fn put(&mut self, _: fmt::Arguments<'_>, _: u64) {}
    fn gauge(&mut self, name: fmt::Arguments<'_>, _: u64) {
        self.0.insert(name.to_string());
    }
}

/// A sink that keeps the names alone, in report order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Names(pub Vec<String>);

impl Sink for Names {
    fn put(&mut self, name: fmt::Arguments<'_>, _: u64) {
        self.0.push(name.to_string());
    }
}

/// Plain per-structure counters (TLBs, PSCs): `accesses` counts lookups (every structure of a
/// level is probed on each lookup of that level it serves); hits + misses = accesses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StructStats {
    pub accesses: u64,
    pub hits: u64,
    pub misses: u64,
    pub fills: u64,
    pub evictions: u64,
    pub invalidations: u64,
}

impl StructStats {
    /// Report the six counters as `{prefix}.{name}.{counter}`.
    pub fn report(&self, prefix: &str, name: &str, out: &mut dyn Sink) {
        self.report_as(&format!("{prefix}.{name}"), out);
    }

    /// Report the six counters as `{path}.{counter}` (a structure of which there is one).
    pub fn report_as(&self, path: &str, out: &mut dyn Sink) {
        for (k, v) in [
            ("accesses", self.accesses),
            ("hits", self.hits),
            ("misses", self.misses),
            ("fills", self.fills),
            ("evictions", self.evictions),
            ("invalidations", self.invalidations),
        ] {
            out.put(format_args!("{path}.{k}"), v);
        }
    }
}

impl std::ops::Sub for StructStats {
    type Output = StructStats;
    fn sub(self, o: StructStats) -> StructStats {
        StructStats {
            accesses: self.accesses - o.accesses,
            hits: self.hits - o.hits,
            misses: self.misses - o.misses,
            fills: self.fills - o.fills,
            evictions: self.evictions - o.evictions,
            invalidations: self.invalidations - o.invalidations,
        }
    }
}

/// Report the named `u64` fields of a struct as `{prefix}.{field}`, or as
/// `{prefix}.{name}.{field}` for a named instance:
/// `report_fields!(out, "os", self.stats, page_faults, faults_4k)`,
/// `report_fields!(out, "cache", s, name; hits, misses)`.
#[macro_export]
macro_rules! report_fields {
    ($out:expr, $prefix:literal, $s:expr, $name:expr; $($f:ident),* $(,)?) => {{
        $( $out.put(format_args!(concat!($prefix, ".{}.", stringify!($f)), $name), $s.$f); )*
    }};
    ($out:expr, $prefix:literal, $s:expr, $($f:ident),* $(,)?) => {{
        $( $out.put(format_args!(concat!($prefix, ".", stringify!($f))), $s.$f); )*
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Two;
    impl Counters for Two {
        fn counters(&self, out: &mut dyn Sink) {
            let name = "x";
            out.put(format_args!("b.{name}"), 2);
            out.put(format_args!("a"), 1);
        }
    }

    #[test]
    fn named_and_values_see_the_same_counters() {
        let mut n = Named::default();
        Two.counters(&mut n);
        assert_eq!(n.0.into_iter().collect::<Vec<_>>(), vec![("a".to_string(), 1), ("b.x".to_string(), 2)]);
        let mut v = Values::default();
        Two.counters(&mut v);
        assert_eq!(v.0, vec![2, 1]);
    }
}
