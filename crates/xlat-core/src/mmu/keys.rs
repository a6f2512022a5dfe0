//! TLB keys: a VPN of the entry's page size, the size, and an address-space tag, in one word.

use crate::units::PageSize;

/// Bits of the VPN kept in a key (57-bit VAs have 45-bit 4KB VPNs).
pub const VPN_BITS: u32 = 46;
pub const VPN_MASK: u64 = (1 << VPN_BITS) - 1;

/// Address-space tag of a key (0 when ASIDs are off: the TLB is flushed on a switch).
#[inline(always)]
pub fn asid_tag(asid: u32) -> u64 {
    ((asid as u64) & 0xffff) << 48
}

/// TLB key: VPN of the entry's page size, the size, and the ASID tag.
#[inline(always)]
pub fn tlb_key(va: u64, size: PageSize, tag: u64) -> u64 {
    ((va >> size.shift()) & VPN_MASK) | ((size as u64) << VPN_BITS) | tag
}

/// The page (start, size, asid tag) a key covers.
pub fn key_range(key: u64) -> (u64, u64, u64) {
    let size = PageSize::from_index(((key >> VPN_BITS) & 3) as usize);
    ((key & VPN_MASK) << size.shift(), size.bytes(), key & !((1 << 48) - 1))
}
