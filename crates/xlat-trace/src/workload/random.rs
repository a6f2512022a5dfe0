//! The random numbers every workload draws from.

/// Random number generator used by all workloads.
pub type Rng = rand_xoshiro::Xoshiro256PlusPlus;

pub fn rng(seed: u64, stream: u64) -> Rng {
    use rand::SeedableRng;
    Rng::seed_from_u64(seed ^ stream.wrapping_mul(0x9e3779b97f4a7c15))
}

/// Uniform integer in `[0, n)` (Lemire's multiply-shift, no division).
#[inline(always)]
pub fn below(r: u64, n: u64) -> u64 {
    ((r as u128 * n as u128) >> 64) as u64
}
