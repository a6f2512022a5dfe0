//! A keyed pseudo-random permutation of `[0, n)` computed on the fly (Feistel network with cycle
//! walking), so that workloads over tens of GiB need no table of that size.

#[inline]
fn mix(mut z: u64) -> u64 {
    // splitmix64 finaliser
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half: u32,
    mask: u64,
    keys: [u64; 4],
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Permutation {
        assert!(n > 0);
        let bits = (64 - (n - 1).leading_zeros()).max(2);
        let half = bits.div_ceil(2);
        let mut keys = [0u64; 4];
        for (i, k) in keys.iter_mut().enumerate() {
            *k = mix(seed ^ mix(0x9e3779b97f4a7c15u64.wrapping_mul(i as u64 + 1)));
        }
        Permutation { n, half, mask: (1u64 << half) - 1, keys }
    }

    #[inline]
    fn encrypt(&self, x: u64) -> u64 {
        let mut l = x >> self.half;
        let mut r = x & self.mask;
        for k in self.keys {
            let t = l ^ (mix(r ^ k) & self.mask);
            l = r;
            r = t;
        }
        (l << self.half) | r
    }

    /// The image of `x` (which must be `< n`).
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        debug_assert!(x < self.n);
        let mut y = self.encrypt(x);
        // The Feistel domain is at most 4n, so the walk ends after a few steps on average.
        while y >= self.n {
            y = self.encrypt(y);
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn is_a_permutation() {
        for n in [1u64, 2, 3, 7, 100, 1000, 4096, 5000] {
            let p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.apply(x);
                assert!(y < n);
                assert!(!seen[y as usize], "n={n}: {y} twice");
                seen[y as usize] = true;
            }
        }
    }
    #[test]
    fn depends_on_seed() {
        let a: Vec<u64> = (0..100).map(|x| Permutation::new(100, 1).apply(x)).collect();
        let b: Vec<u64> = (0..100).map(|x| Permutation::new(100, 2).apply(x)).collect();
        assert_ne!(a, b);
    }
}
