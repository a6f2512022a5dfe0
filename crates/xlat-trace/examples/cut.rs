//! Write the first accesses of a trace to a new file in the current format, in blocks of a
//! given size: how the fuzz corpus's small real traces were made (see `docs/fuzzing.md`).
//!
//! `cargo run --release -p xlat-trace --example cut -- IN OUT ACCESSES [BLOCK]`
//! (OUT ending in `.txt` gets the text form, with its end line.)

use std::io::{BufWriter, Write};
use xlat_trace::{source, text, Batch, TraceWriter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, out, n, rest @ ..] = &args[..] else {
        return Err("usage: cut IN OUT ACCESSES [BLOCK]".into());
    };
    let limit: usize = n.parse()?;
    let block: usize = rest.first().map_or(Ok(limit.max(1)), |b| b.parse())?;
    let mut src = source::open(input)?;
    let (mut all, mut b) = (Batch::default(), Batch::default());
    while all.len() < limit && src.next_batch(&mut b)? {
        all.append(&b);
    }
    all.truncate(limit);
    let file = BufWriter::new(std::fs::File::create(out)?);
    if text::is_text_path(out) {
        let mut w = text::TextWriter::new(file, src.header())?;
        w.write_batch(&all)?;
        w.finish()?.flush()?;
        return Ok(());
    }
    let mut w = TraceWriter::new(file, src.header())?;
    let mut piece = Batch::default();
    for e in all.events() {
        if piece.len() == block && matches!(e, xlat_trace::Event::Access(_)) {
            w.write_batch(&piece)?;
            piece.clear();
        }
        piece.push_event(e);
    }
    w.write_batch(&piece)?;
    w.finish()?.0.flush()?;
    Ok(())
}
