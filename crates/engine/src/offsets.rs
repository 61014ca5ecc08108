//! Which transfer a worker issues next.
//!
//! A worker's share of a phase is `n` transfers. Sequential order walks them
//! in turn; random order visits every one exactly once in a seeded shuffle
//! (full coverage, as IOR -z and fio's random map do), without storing a
//! list: memory stays constant however large the file.

/// Yields transfer indices in `[0, n)`.
#[derive(Debug, Clone)]
pub enum OffsetGen {
    /// 0, 1, 2, …
    Sequential {
        /// Next index.
        next: u64,
        /// Count.
        n: u64,
    },
    /// A seeded bijection of `[0, n)`, walked in index order.
    Shuffled {
        /// Position in the walk over the permutation domain.
        pos: u64,
        /// Count.
        n: u64,
        /// The permutation.
        perm: Permutation,
    },
    /// Segment by segment, the transfers of each block in one seeded
    /// shuffle (the same for every segment), as IOR's `-z` walks them.
    BlockShuffled {
        /// The segment in walk.
        seg: u64,
        /// Segments in all.
        segs: u64,
        /// Position in the walk over the permutation domain.
        pos: u64,
        /// Transfers per block.
        per_block: u64,
        /// The permutation of one block's transfers.
        perm: Permutation,
    },
    /// `n` draws, each uniform in `[0, span)`, repeats allowed (fio's
    /// `norandommap`, IOR's `-z -z`).
    Uniform {
        /// Draws left.
        left: u64,
        /// Indices drawn from.
        span: u64,
        /// The draws' state.
        rng: u64,
    },
}

impl OffsetGen {
    /// A sequential walk over `n` transfers.
    pub fn sequential(n: u64) -> Self {
        OffsetGen::Sequential { next: 0, n }
    }

    /// A shuffled walk over `n` transfers, each exactly once.
    pub fn shuffled(n: u64, seed: u64) -> Self {
        OffsetGen::Shuffled {
            pos: 0,
            n,
            perm: Permutation::new(n, seed),
        }
    }

    /// `segs` segments of `per_block` transfers, each block's in the same
    /// seeded shuffle, the segments in order.
    pub fn block_shuffled(segs: u64, per_block: u64, seed: u64) -> Self {
        OffsetGen::BlockShuffled {
            seg: 0,
            segs,
            pos: 0,
            per_block,
            perm: Permutation::new(per_block, seed),
        }
    }

    /// `n` independent draws from `[0, span)` (none when `span` is 0).
    pub fn uniform(n: u64, span: u64, seed: u64) -> Self {
        OffsetGen::Uniform {
            left: if span == 0 { 0 } else { n },
            span,
            rng: seed,
        }
    }

    /// The next transfer index, or `None` when all were issued.
    #[inline]
    pub fn next_index(&mut self) -> Option<u64> {
        match self {
            OffsetGen::Sequential { next, n } => {
                if *next < *n {
                    *next += 1;
                    Some(*next - 1)
                } else {
                    None
                }
            }
            OffsetGen::Shuffled { pos, n, perm } => next_shuffled(pos, *n, perm),
            OffsetGen::BlockShuffled {
                seg,
                segs,
                pos,
                per_block,
                perm,
            } => loop {
                if *seg >= *segs {
                    return None;
                }
                if let Some(v) = next_shuffled(pos, *per_block, perm) {
                    return Some(*seg * *per_block + v);
                }
                *seg += 1;
                *pos = 0;
            },
            OffsetGen::Uniform { left, span, rng } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                Some(splitmix64(rng) % *span)
            }
        }
    }
}

/// Cycle walking: the domain is the next power of two above n, so on
/// average fewer than two steps land inside [0, n).
///
/// Kept out of line on purpose: inlined into the worker loop, LLVM
/// vectorises this search with emulated 64-bit multiplies, which measured
/// about 700 instructions per offset instead of about 40 (callgrind).
#[inline(never)]
fn next_shuffled(pos: &mut u64, n: u64, perm: &Permutation) -> Option<u64> {
    while *pos < perm.domain() {
        let v = perm.apply(*pos);
        *pos += 1;
        if v < n {
            return Some(v);
        }
    }
    None
}

/// A keyed bijection on `[0, 2^bits)` built from steps that are each
/// invertible modulo a power of two (add a constant, multiply by an odd
/// constant, xor with a right shift). Not cryptographic; it only needs to
/// scatter offsets well enough that no device read-ahead or prefetch sees a
/// pattern.
#[derive(Debug, Clone, Copy)]
pub struct Permutation {
    bits: u32,
    mask: u64,
    keys: [u64; 4],
}

impl Permutation {
    /// A permutation whose domain covers `n` (at most twice `n`).
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = if n <= 1 {
            0
        } else {
            64 - (n - 1).leading_zeros()
        };
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let mut s = seed;
        let mut keys = [0u64; 4];
        for k in &mut keys {
            *k = splitmix64(&mut s);
        }
        Permutation { bits, mask, keys }
    }

    /// Size of the domain (a power of two ≥ n).
    pub fn domain(&self) -> u64 {
        if self.bits >= 64 {
            u64::MAX
        } else {
            1u64 << self.bits
        }
    }

    /// Maps `x` (which must be inside the domain) to its image.
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        if self.bits == 0 {
            return 0;
        }
        let m = self.mask;
        let half = (self.bits / 2).max(1);
        let mut v = x;
        for k in self.keys {
            v = v.wrapping_add(k) & m;
            v = v.wrapping_mul(k | 1) & m;
            v ^= v >> half;
        }
        v
    }
}

/// One step of the SplitMix64 generator (Steele, Lea & Flood 2014): a fast,
/// well-mixed 64-bit sequence from a counter, used for seeds and the
/// read/write choice of mixed phases.
#[inline]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(mut g: OffsetGen) -> Vec<u64> {
        let mut v = Vec::new();
        while let Some(i) = g.next_index() {
            v.push(i);
        }
        v
    }

    #[test]
    fn sequential_in_order() {
        assert_eq!(collect(OffsetGen::sequential(5)), vec![0, 1, 2, 3, 4]);
        assert!(collect(OffsetGen::sequential(0)).is_empty());
    }

    #[test]
    fn shuffled_covers_every_index_once() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let mut v = collect(OffsetGen::shuffled(n, 42));
            assert_eq!(v.len() as u64, n);
            if n > 16 {
                // Not the identity order.
                assert_ne!(v, (0..n).collect::<Vec<_>>());
            }
            v.sort_unstable();
            assert_eq!(v, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn block_shuffled_walks_the_segments_in_order_each_shuffled_alike() {
        let v = collect(OffsetGen::block_shuffled(3, 100, 9));
        assert_eq!(v.len(), 300);
        for (s, chunk) in v.chunks(100).enumerate() {
            let mut c = chunk.to_vec();
            let order: Vec<u64> = c.iter().map(|i| i - s as u64 * 100).collect();
            // The same shuffle in every segment, not the identity.
            assert_eq!(order, v[..100].to_vec());
            c.sort_unstable();
            assert_eq!(
                c,
                (s as u64 * 100..(s as u64 + 1) * 100).collect::<Vec<_>>()
            );
        }
        assert_ne!(v[..100].to_vec(), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn uniform_draws_stay_in_the_span_and_repeat() {
        let v = collect(OffsetGen::uniform(10_000, 100, 7));
        assert_eq!(v.len(), 10_000);
        assert!(v.iter().all(|&i| i < 100));
        let mut d = v.clone();
        d.sort_unstable();
        d.dedup();
        // 10,000 draws from 100 slots: every slot drawn, most many times.
        assert_eq!(d.len(), 100);
        assert!(collect(OffsetGen::uniform(5, 0, 7)).is_empty());
    }

    #[test]
    fn shuffled_depends_on_seed() {
        let a = collect(OffsetGen::shuffled(1000, 1));
        let b = collect(OffsetGen::shuffled(1000, 2));
        let a2 = collect(OffsetGen::shuffled(1000, 1));
        assert_ne!(a, b);
        assert_eq!(a, a2);
    }

    #[test]
    fn shuffle_scatters() {
        // Successive offsets should rarely be neighbours.
        let v = collect(OffsetGen::shuffled(1 << 16, 7));
        let adjacent = v.windows(2).filter(|w| w[0].abs_diff(w[1]) == 1).count();
        assert!(adjacent < v.len() / 100, "{adjacent} adjacent pairs");
    }
}
