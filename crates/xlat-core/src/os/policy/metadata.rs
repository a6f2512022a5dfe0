//! Metadata granularity: where access/dirty metadata is kept.

/// Whether page-table pages get a companion page for metadata (PRISM's metadata registry: one
/// 4KB page beside each page-table page of a level, one 8-byte entry per entry of the table).
pub trait MetadataGranularity: Send {
    fn name(&self) -> &'static str;
    /// The page-table level whose tables get a companion page; None: metadata lives in the
    /// page-table entries only.
    fn companion_level(&self) -> Option<usize>;
}

/// One accessed and one dirty bit per page-table leaf, as x86-64 (`os.metadata = "page"`, the
/// default).
pub struct PerPage;

impl MetadataGranularity for PerPage {
    fn name(&self) -> &'static str {
        "page"
    }
    fn companion_level(&self) -> Option<usize> {
        None
    }
}

/// A companion page beside every page-directory (level-2) page (`os.metadata = "registry"`):
/// entry i of the companion holds the metadata of the 2MB region of PDE i (sub-page access
/// bits of its 4KB pages, or of the 2MB page).
pub struct Registry;

impl MetadataGranularity for Registry {
    fn name(&self) -> &'static str {
        "registry"
    }
    fn companion_level(&self) -> Option<usize> {
        Some(2)
    }
}
