//! Progress bars on stderr. Asked for (`progress=true`, the CLI's `--progress`), a bar is drawn
//! even when stderr is not a terminal: then as plain lines, at most one a second, with no cursor
//! movement, so a log file gets a readable record of a long run.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use std::io::{self, Write};
use xlat_trace::EventSource;

/// Stderr as a terminal that cannot move its cursor: each redraw is one new line.
#[derive(Debug)]
struct PlainStderr;

impl TermLike for PlainStderr {
    fn width(&self) -> u16 {
        100
    }
    fn move_cursor_up(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> io::Result<()> {
        if s.trim().is_empty() {
            return Ok(());
        }
        writeln!(io::stderr(), "{s}")
    }
    fn write_str(&self, s: &str) -> io::Result<()> {
        self.write_line(s)
    }
    fn clear_line(&self) -> io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// Where an asked-for bar draws: the terminal, or plain lines when stderr is not one.
fn target() -> ProgressDrawTarget {
    let t = ProgressDrawTarget::stderr();
    if t.is_hidden() {
        ProgressDrawTarget::term_like_with_hz(Box::new(PlainStderr), 1)
    } else {
        t
    }
}

/// A bar of `len` units with `template`, drawn where [`target`] says.
pub fn bar(len: u64, template: &str) -> ProgressBar {
    let b = ProgressBar::with_draw_target(Some(len), target());
    b.set_style(ProgressStyle::with_template(template).expect("valid template"));
    b
}

/// A spinner (no known total) with `template`.
pub fn spinner(template: &str) -> ProgressBar {
    let b = ProgressBar::with_draw_target(None, target());
    b.set_style(ProgressStyle::with_template(template).expect("valid template"));
    b
}

pub const BAR: &str = "{msg} [{elapsed_precise}] {wide_bar} {percent:>3}% eta {eta}";

/// A progress bar on stderr, advanced from the source's own progress measure.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    pub fn new(enabled: bool, src: &dyn EventSource, what: &str) -> Progress {
        if !enabled {
            return Progress(None);
        }
        let (_, total) = src.progress();
        let b = bar(total.unwrap_or(0), BAR);
        b.set_message(what.to_string());
        Progress(Some(b))
    }
    pub fn update(&self, src: &dyn EventSource) {
        if let Some(b) = &self.0 {
            b.set_position(src.progress().0);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}
