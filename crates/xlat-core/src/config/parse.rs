//! TOML for configurations and layouts: parsing into a table, `--set key=value` overrides, and
//! typed deserialisation whose errors name the field, each as one sentence.

/// A configuration or layout problem, as one sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

pub type Result<T> = std::result::Result<T, ConfigError>;

pub(crate) fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(ConfigError(msg.into()))
}

/// Parse a TOML value as `T`, naming the path of the offending field on error.
pub(crate) fn from_value<T: serde::de::DeserializeOwned>(what: &str, v: toml::Value) -> Result<T> {
    let original = v.clone();
    serde_path_to_error::deserialize(v).map_err(|e| {
        let mut path = e.path().to_string();
        // Name the component of an array entry: "tlb[3] (stlb).page_sizes[1]".
        if let Some((arr, rest)) = path.split_once('[') {
            if let Some((idx, tail)) = rest.split_once(']') {
                let name = idx
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| original.get(arr)?.get(i)?.get("name")?.as_str().map(str::to_string));
                if let Some(n) = name {
                    path = format!("{arr}[{idx}] ('{n}'){tail}");
                }
            }
        }
        let inner = e.into_inner().to_string();
        // toml appends "\nin `table`" context; the path already says where.
        let inner = inner.lines().next().unwrap_or("").trim().trim_end_matches('.');
        if path == "." || path.is_empty() {
            ConfigError(format!("{what}: {inner}."))
        } else {
            ConfigError(format!("{what}: field {path}: {inner}."))
        }
    })
}

/// Parse TOML text into a table, one sentence on error.
pub(crate) fn parse_toml(what: &str, text: &str) -> Result<toml::Table> {
    text.parse::<toml::Table>().map_err(|e| {
        let msg = e.message().trim().trim_end_matches('.').replace('\n', ": ");
        let at = e
            .span()
            .map(|s| {
                let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                format!(" (line {line})")
            })
            .unwrap_or_default();
        ConfigError(format!("{what}: invalid TOML{at}: {msg}."))
    })
}

/// The arrays of named entries (`[[tlb]]`, ...) that [`extend`] merges by `name`.
const NAMED: &[&str] = &["tlb", "psc", "cache", "range_tlb"];

/// A configuration that starts from a preset (`extends = "sandybridge"`): the preset's table with
/// `child` merged over it. Tables merge key by key; the arrays of named structures (`[[tlb]]`,
/// `[[psc]]`, `[[cache]]`, `[[range_tlb]]`) merge by `name`: an entry of a name the preset has
/// changes the fields it gives, `remove = true` drops that entry, a new name is appended; any
/// other value replaces the preset's. `what` names the file in errors.
pub(crate) fn extend(what: &str, mut child: toml::Table) -> Result<toml::Table> {
    let Some(base) = child.remove("extends") else { return Ok(child) };
    let Some(name) = base.as_str() else {
        return err(format!(
            "{what}: extends must name a preset ({}), not {base}.",
            crate::presets::names().join(", ")
        ));
    };
    let Some(text) = crate::presets::get(name) else {
        return err(format!(
            "{what}: extends = \"{name}\" names no preset (known: {}).",
            crate::presets::names().join(", ")
        ));
    };
    let mut table = parse_toml(name, text)?;
    merge(what, &mut table, child)?;
    Ok(table)
}

fn merge(what: &str, base: &mut toml::Table, over: toml::Table) -> Result<()> {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(what, b, o)?,
            (Some(toml::Value::Array(b)), toml::Value::Array(o)) if NAMED.contains(&k.as_str()) => {
                for entry in o {
                    let toml::Value::Table(mut e) = entry else {
                        return err(format!("{what}: each [[{k}]] entry must be a table."));
                    };
                    let Some(n) = e.get("name").and_then(|n| n.as_str()).map(str::to_string) else {
                        return err(format!("{what}: a [[{k}]] entry of a configuration that extends a preset needs a name (the preset's to change it, a new one to add it)."));
                    };
                    let remove = match e.remove("remove") {
                        None => false,
                        Some(toml::Value::Boolean(r)) => r,
                        Some(x) => {
                            return err(format!("{what}: [[{k}]] '{n}': remove must be true or false, not {x}."))
                        }
                    };
                    let at = b.iter().position(|x| x.get("name").and_then(|m| m.as_str()) == Some(n.as_str()));
                    match (at, remove) {
                        (Some(i), true) => {
                            b.remove(i);
                        }
                        (None, true) => {
                            return err(format!(
                                "{what}: [[{k}]] '{n}': remove = true, but the preset has no {k} named '{n}'."
                            ))
                        }
                        (Some(i), false) => match &mut b[i] {
                            toml::Value::Table(t) => merge(what, t, e)?,
                            _ => return err(format!("{what}: the preset's {k} '{n}' is not a table.")),
                        },
                        (None, false) => b.push(toml::Value::Table(e)),
                    }
                }
            }
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
    Ok(())
}

/// Apply one `key=value` override to a configuration table. Keys are dotted paths; arrays of
/// named tables (`tlb`, `psc`, `cache`, `range_tlb`, `memory.kinds`) are indexed by name:
/// `tlb.l2.entries=2048`. A whole entry takes an inline table: `tlb.l2x={level = 2, entries =
/// 64, ways = 4, page_sizes = ["4KB"]}` adds the structure `l2x` (or, when it exists, sets those
/// of its fields), and `tlb.l2x={remove = true}` removes it, as `remove = true` does under
/// `extends`. The value is read as TOML (`2048`, `true`, `"lru"`, `{...}`), or as a string when
/// that fails (`os.policy=thp`).
pub fn apply_set(table: &mut toml::Table, assignment: &str) -> Result<()> {
    if assignment.contains(['\n', '\r']) {
        return err(format!(
            "--set '{}' holds a line break; give one key=value on one line.",
            assignment.escape_debug()
        ));
    }
    let (key, value) = assignment
        .split_once('=')
        .ok_or_else(|| ConfigError(format!("--set '{assignment}' is not of the form key=value.")))?;
    let key = key.trim();
    let value = value.trim();
    let parsed: toml::Value = match format!("v = {value}").parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").expect("parsed key"),
        Err(_) => toml::Value::String(value.to_string()),
    };
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return err(format!("--set '{assignment}': the key '{key}' has an empty part."));
    }
    let mut cur: &mut toml::Table = table;
    let mut i = 0;
    while i + 1 < parts.len() {
        let p = parts[i];
        if matches!(p, "tlb" | "psc" | "cache" | "range_tlb") || (p == "kinds" && i == 1 && parts[0] == "memory") {
            let name = parts[i + 1];
            if i + 2 == parts.len() {
                // `tlb.NAME={...}`: add the structure, change several of its fields, or remove it.
                return set_whole_entry(cur, p, name, parsed, assignment);
            }
            let arr = cur
                .get_mut(p)
                .and_then(|v| v.as_array_mut())
                .ok_or_else(|| ConfigError(format!("--set '{assignment}': the configuration has no {p} entries.")))?;
            let names: Vec<String> =
                arr.iter().filter_map(|t| t.get("name").and_then(|n| n.as_str())).map(|n| format!("'{n}'")).collect();
            let found = arr.iter_mut().find(|t| t.get("name").and_then(|n| n.as_str()) == Some(name));
            let Some(entry) = found.and_then(|v| v.as_table_mut()) else {
                return err(format!(
                    "--set '{assignment}': there is no {p} named '{name}' (this configuration's: {}).",
                    names.join(", ")
                ));
            };
            cur = entry;
            i += 2;
            continue;
        }
        let next = cur.entry(p.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = next.as_table_mut().ok_or_else(|| ConfigError(format!("--set '{assignment}': '{p}' is not a table.")))?;
        i += 1;
    }
    cur.insert(parts[parts.len() - 1].to_string(), parsed);
    Ok(())
}

/// `--set ARRAY.NAME={fields}` ([`apply_set`]): add entry `name` to the array `kind` of `table`
/// (creating the array), set the given fields of an existing one, or remove it (`remove = true`).
fn set_whole_entry(
    table: &mut toml::Table,
    kind: &str,
    name: &str,
    value: toml::Value,
    assignment: &str,
) -> Result<()> {
    let toml::Value::Table(mut fields) = value else {
        return err(format!(
            "--set '{assignment}': give a field ({kind}.{name}.FIELD=VALUE), or a table of fields to add or change \
             {kind} '{name}' ({kind}.{name}={{level = 2, ...}}) or to remove it ({kind}.{name}={{remove = true}})."
        ));
    };
    if let Some(n) = fields.get("name") {
        if n.as_str() != Some(name) {
            return err(format!("--set '{assignment}': the table names {kind} {n}, not '{name}'."));
        }
    }
    let arr = table.entry(kind.to_string()).or_insert_with(|| toml::Value::Array(Vec::new()));
    let arr = arr
        .as_array_mut()
        .ok_or_else(|| ConfigError(format!("--set '{assignment}': '{kind}' is not an array of tables.")))?;
    let at = arr.iter().position(|t| t.get("name").and_then(|n| n.as_str()) == Some(name));
    if fields.get("remove") == Some(&toml::Value::Boolean(true)) {
        if fields.len() > 1 {
            return err(format!("--set '{assignment}': remove = true takes no other field."));
        }
        let Some(at) = at else {
            let names: Vec<String> =
                arr.iter().filter_map(|t| t.get("name").and_then(|n| n.as_str())).map(|n| format!("'{n}'")).collect();
            return err(format!(
                "--set '{assignment}': there is no {kind} named '{name}' to remove (this configuration's: {}).",
                names.join(", ")
            ));
        };
        arr.remove(at);
        return Ok(());
    }
    match at.and_then(|at| arr[at].as_table_mut()) {
        Some(entry) => entry.extend(fields),
        None => {
            let mut entry = toml::Table::new();
            entry.insert("name".into(), toml::Value::String(name.to_string()));
            fields.remove("name");
            entry.extend(fields);
            arr.push(toml::Value::Table(entry));
        }
    }
    Ok(())
}

/// A set-associative structure's geometry: entries and ways positive, ways dividing entries,
/// tree-PLRU within its 64 ways; `w` names the structure in the sentence.
pub(crate) fn check_geometry(w: &str, entries: u64, ways: u64, repl: crate::array::Replacement) -> Result<()> {
    if entries == 0 {
        return err(format!("{w}: entries must be positive, not 0."));
    }
    if entries > (1 << 28) {
        return err(format!("{w}: entries = {entries} is larger than 2^28."));
    }
    if ways == 0 {
        return err(format!("{w}: ways must be positive, not 0."));
    }
    if ways > entries || !entries.is_multiple_of(ways) {
        return err(format!("{w}: ways = {ways} does not divide entries = {entries}."));
    }
    if repl == crate::array::Replacement::TreePlru && ways > 64 {
        return err(format!("{w}: tree-plru supports at most 64 ways, not {ways}."));
    }
    Ok(())
}
