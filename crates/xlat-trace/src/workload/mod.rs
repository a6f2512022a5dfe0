//! Synthetic workloads generated in-process, deterministic per seed.
//!
//! Each workload behaves like a small C program linked with glibc: it grows the heap with `brk`,
//! allocates its large arrays with `malloc` (which glibc serves with an anonymous `mmap` for
//! requests of 128 KiB and more, returning the mapping plus a 16-byte chunk header), and then
//! accesses them. The emitted syscalls make the trace's address space what a real run's would be.
//! Nothing of the virtual footprint is allocated here: addresses are computed, so a 64 GiB table
//! costs nothing.
//!
//! This module picks a workload by name ([`open`], [`catalog`]); what the workloads share lives
//! in leaf modules they use directly: [`emit`] (what a generator writes into), [`process`] (the
//! emulated process), [`random`], [`params`] and [`perm`].

mod bfs;
pub mod emit;
pub mod ipc;
#[cfg(test)]
mod ipc_tests;
mod kernels;
pub mod params;
pub mod perm;
pub mod process;
pub mod random;
pub mod synthetic;
#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use crate::format::Header;
pub use emit::{Emit, Generator, Threads, TID};
pub use params::{parse_size, ParamKind, ParamSpec, Params, WorkloadInfo, COMMON as COMMON_PARAMS};
pub use process::Proc;
pub use random::{below, rng, Rng};
pub use synthetic::Synthetic;

/// Every workload, in the order `xlat workloads` lists them.
pub fn catalog() -> &'static [WorkloadInfo] {
    &[kernels::GUPS, kernels::CHASE, kernels::STREAM, kernels::STRIDE, kernels::ZIPF, bfs::BFS, ipc::CLIENTSERVER]
}

/// Parse a `workload:NAME?k=v` spec (the `workload:` prefix is optional).
pub fn open(spec: &str) -> Result<Synthetic> {
    let body = spec.strip_prefix("workload:").unwrap_or(spec);
    let (name, query) = body.split_once('?').unwrap_or((body, ""));
    let info = catalog().iter().find(|w| w.name == name).ok_or_else(|| Error::Workload {
        spec: spec.to_string(),
        detail: format!(
            "there is no workload named '{name}' (known: {})",
            catalog().iter().map(|w| w.name).collect::<Vec<_>>().join(", ")
        ),
    })?;
    let params = Params::parse(spec, name, info.params, query)?;
    let mut proc = Proc::new();
    let mut target = params.int("accesses");
    let mut threads = vec![TID];
    let gen: Box<dyn Generator> = match name {
        "gups" => Box::new(kernels::Gups::new(&params, &mut proc)?),
        "chase" => Box::new(kernels::Chase::new(&params, &mut proc)?),
        "stream" => Box::new(kernels::Stream::new(&params, &mut proc)?),
        "stride" => Box::new(kernels::Stride::new(&params, &mut proc)?),
        "zipf" => Box::new(kernels::Zipf::new(&params, &mut proc)?),
        "bfs" => Box::new(bfs::Bfs::new(&params, &mut proc)?),
        "clientserver" => {
            let g = ipc::ClientServer::new(&params, &mut proc)?;
            target = g.accesses_for_rounds().unwrap_or(target);
            threads = g.threads();
            Box::new(g)
        }
        _ => unreachable!("catalog and constructors agree"),
    };
    let canonical = params.canonical(name);
    let mut header = Header::new(format!("xlat {} workload", env!("CARGO_PKG_VERSION")));
    header.command = vec![canonical];
    header.page_size_hint = 4096;
    header.threads = threads;
    header.metadata.insert("workload".into(), name.into());
    header.metadata.insert("params".into(), serde_json::Value::Object(params.to_json()));
    header.metadata.insert("mapped_bytes".into(), proc.mapped.into());
    Ok(Synthetic::new(header, gen, proc, target))
}
