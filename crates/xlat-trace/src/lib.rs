//! xlat-trace: the events xlat simulates, their compressed file format, and where they come from.
//!
//! ```
//! use xlat_trace::{source, Batch, EventSource};
//! let mut src = source::open("workload:gups?size=64GiB&accesses=1000").unwrap();
//! let mut batch = Batch::default();
//! let mut n = 0;
//! while src.next_batch(&mut batch).unwrap() {
//!     n += batch.len();
//! }
//! assert_eq!(n, 1000);
//! ```

pub mod error;
pub mod event;
pub mod event_source;
pub mod export;
pub mod format;
pub mod import;
pub mod info;
mod input;
pub mod reader;
pub mod source;
pub mod text;
mod varint;
pub mod window;
pub mod workload;
pub mod writer;

pub use error::{Error, Result};
pub use event::{Access, AccessKind, Batch, Event, Marker, SideBody, SideEvent, Syscall, SyscallKind};
pub use event_source::EventSource;
pub use format::{Footer, Header};
pub use reader::TraceReader;
pub use window::{windowed, Window, Windowed};
pub use writer::TraceWriter;
