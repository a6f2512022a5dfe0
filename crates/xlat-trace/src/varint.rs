//! LEB128 varints and zigzag, the integer encoding of the access columns.

#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[inline]
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decode one varint at `*pos`; `None` if the buffer ends inside it or it is longer than 10 bytes.
#[inline(always)]
pub fn get(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let p = *pos;
    // Fast path: one byte.
    let b0 = *buf.get(p)?;
    if b0 < 0x80 {
        *pos = p + 1;
        return Some(b0 as u64);
    }
    let mut v = (b0 & 0x7f) as u64;
    let mut shift = 7;
    let mut i = p + 1;
    loop {
        let b = *buf.get(i)?;
        i += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            *pos = i;
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn roundtrip(v: u64) {
            let mut b = Vec::new();
            put(&mut b, v);
            let mut p = 0;
            prop_assert_eq!(get(&b, &mut p), Some(v));
            prop_assert_eq!(p, b.len());
        }
        #[test]
        fn zigzag_roundtrip(v: i64) {
            prop_assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn truncated_and_overlong() {
        let mut p = 0;
        assert_eq!(get(&[0x80], &mut p), None);
        let mut p = 0;
        assert_eq!(get(&[0xff; 11], &mut p), None);
    }
}
