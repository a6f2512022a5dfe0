//! CPU presets: TOML data files in `configs/cpus/`, embedded at build time so that the library
//! and the CLI find them from any directory. `docs/presets.md` lists their sources.

/// (name, TOML text) of every preset.
pub const ALL: &[(&str, &str)] = &[
    ("sandybridge", include_str!("../../../configs/cpus/sandybridge.toml")),
    ("haswell", include_str!("../../../configs/cpus/haswell.toml")),
    ("broadwell", include_str!("../../../configs/cpus/broadwell.toml")),
    ("skylake", include_str!("../../../configs/cpus/skylake.toml")),
    ("sapphirerapids", include_str!("../../../configs/cpus/sapphirerapids.toml")),
    ("zen4", include_str!("../../../configs/cpus/zen4.toml")),
];

/// The TOML text of preset `name`.
pub fn get(name: &str) -> Option<&'static str> {
    ALL.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Names of every preset.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|(n, _)| *n).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_preset_parses_and_validates() {
        for (name, text) in super::ALL {
            let c = crate::Config::from_toml(name, text, &[]).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&c.name, name);
            assert!(!c.source.is_empty());
        }
    }
}
