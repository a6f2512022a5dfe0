//! The integration tests of xlat-trace, one binary (one link, not one per file): each file below is
//! a module; `cargo test --release -p xlat-trace --test integration NAME::` runs one file's tests.

mod blocks;
mod footer;
mod format;
mod info;
mod invariants;
mod text_end;

/// A file in the temporary directory, removed when dropped (a name of its own: the tests run in
/// parallel). Shared by the modules above.
pub(crate) struct TempFile(std::path::PathBuf);

impl TempFile {
    pub(crate) fn new(name: &str, contents: impl AsRef<[u8]>) -> TempFile {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("xlat-trace-test-{}-{k}-{name}", std::process::id()));
        std::fs::write(&p, contents).unwrap();
        TempFile(p)
    }
    pub(crate) fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
