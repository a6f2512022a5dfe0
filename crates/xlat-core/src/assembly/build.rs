//! Where a configuration is made: parsed and its sections checked by `config/`, then its
//! designs' plan checked ([`super::plan::plan`]).

use super::plan::plan;
use crate::config::layout::Layout;
use crate::config::{apply_set, err, extend, from_value, parse_toml, Config, Policy, Result, Size};

/// A configuration is made here: parsed and its sections checked by `config/`, then its
/// designs' plan checked, so that every way in (`xlat sim`, `Run.check()`, `simulate()`)
/// refuses what the simulator would refuse, with the same sentence.
impl Config {
    /// Parse and validate configuration text; `what` names it in errors (a path or preset).
    pub fn from_toml(what: &str, text: &str, sets: &[String]) -> Result<Config> {
        Self::build(what, text, sets, None)
    }

    /// Parse `text`, apply the `--set` overrides, attach a mosaic `layout` (which selects
    /// `os.policy = "mosaic"`), then validate.
    pub fn build(what: &str, text: &str, sets: &[String], layout: Option<Layout>) -> Result<Config> {
        let mut table = extend(what, parse_toml(what, text)?)?;
        for s in sets {
            apply_set(&mut table, s)?;
        }
        // A [layout] table goes through the layout parser, not serde: the same rules and sentences.
        let inline = match table.remove("layout") {
            None => None,
            Some(toml::Value::Table(t)) => Some(Layout::from_table(&format!("{what} [layout]"), &t)?),
            Some(_) => return err(format!("{what}: layout must be a table (a mosaic layout).")),
        };
        let memory = table.get("memory").and_then(|m| m.as_table());
        let has = |k: &str| memory.is_some_and(|m| m.contains_key(k));
        let (both, size_given) = (has("kinds") && has("dram_latency"), has("size"));
        let mut cfg: Config = from_value(what, toml::Value::Table(table))?;
        cfg.layout = inline;
        if both {
            return err(format!(
                "config '{}': give memory.dram_latency or memory.kinds, not both (with kinds, each kind's read_latency applies).",
                cfg.name
            ));
        }
        if let Some(first) = cfg.memory.kinds.first() {
            cfg.memory.dram_latency = first.read_latency;
            if !size_given {
                cfg.memory.size = Size(cfg.memory.kinds.iter().fold(0u64, |a, k| a.saturating_add(k.size.0)));
            }
        }
        if let Some(l) = layout {
            cfg.layout = Some(l);
            cfg.os.policy = Policy::Mosaic;
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// Check every rule: each section's (`config/`), then that a copy of the loop runs the
    /// configuration's designs together ([`plan`]).
    pub fn validate(&self) -> Result<()> {
        self.validate_sections()?;
        plan(self, false).map(|_| ())
    }
}
