//! Reading helpers shared by the trace reader and the importers.

use std::io::Read;

/// Read until `buf` is full or the input ends, retrying interrupted reads; returns the bytes
/// read, which is short only at the end of the input (0: the input had ended already).
pub(crate) fn read_full<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
