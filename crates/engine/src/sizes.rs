//! Request sizes drawn per request, as fio draws them for `bsrange=` and
//! `bssplit=` (fio 3.33's `get_next_buflen` and `mark_random_map`), and the
//! offsets that go with them.
//!
//! It is a path of its own beside [`crate::offsets::OffsetGen`], so the
//! fixed-size loop pays nothing for it. Sizes are multiples of the
//! smallest (`min`), which is also the unit of offsets (fio's default
//! `blockalign`):
//!
//! - `bsrange`: `min + max × u` for a uniform `u` in [0, 1), rounded down
//!   to a multiple of `min`, at most `max`: every multiple alike;
//! - `bssplit`: the first size whose running percentage the draw falls
//!   under;
//! - a size that does not fit before the region's end is drawn again; the
//!   walk ends when not even `min` fits. A sequential walk so moves the
//!   region's bytes (rounded down to `min`) exactly once;
//! - a random walk picks a block not yet touched (a random block, or the
//!   next untouched one after it) and cuts the request where it meets a
//!   touched block, so it too moves every byte once.

use spec::XferSizes;

use crate::offsets::splitmix64;

/// A walk over one worker's region with drawn request sizes.
#[derive(Debug, Clone)]
pub struct SizeGen {
    min: u64,
    max: u64,
    /// `bssplit`: (size, running percentage).
    split: Vec<(u64, u64)>,
    rng: u64,
    /// Blocks of `min` bytes in the region.
    blocks: u64,
    /// Sequential: the next block. Random: blocks not yet touched.
    next: u64,
    left: u64,
    /// Random: one bit per block, set once touched.
    map: Option<Vec<u64>>,
}

impl SizeGen {
    /// A walk over `region` bytes, in order or at random, seeded.
    pub fn new(z: &XferSizes, region: u64, random: bool, seed: u64) -> Self {
        let min = z.min.max(1);
        let blocks = region / min;
        let mut run = 0u64;
        let split = z
            .split
            .iter()
            .map(|&(b, p)| {
                run += u64::from(p);
                (b, run)
            })
            .collect();
        SizeGen {
            min,
            max: z.max.max(min),
            split,
            rng: seed ^ 0xb5b5_1e57,
            blocks,
            next: 0,
            left: blocks,
            map: random.then(|| vec![0u64; blocks.div_ceil(64) as usize]),
        }
    }

    /// The next request as (offset in the region, length), or `None` when
    /// the walk is done.
    pub fn next_request(&mut self) -> Option<(u64, u32)> {
        if self.map.is_none() {
            let room = (self.blocks - self.next) * self.min;
            if room == 0 {
                return None;
            }
            let len = self.draw(room);
            let off = self.next * self.min;
            self.next += len / self.min;
            return Some((off, len as u32));
        }
        if self.left == 0 {
            return None;
        }
        let pick = ((u128::from(splitmix64(&mut self.rng)) * u128::from(self.blocks)) >> 64) as u64;
        let b = self.free_from(pick);
        let len = self.draw((self.blocks - b) * self.min);
        let n = self.mark(b, len / self.min);
        self.left -= n;
        Some((b * self.min, (n * self.min) as u32))
    }

    /// One size that fits in `room` bytes (at least `min`), drawn as fio
    /// draws it.
    fn draw(&mut self, room: u64) -> u64 {
        loop {
            let r = splitmix64(&mut self.rng) >> 32;
            let mut len = if self.split.is_empty() {
                self.min + ((self.max as f64) * (r as f64 / 4_294_967_296.0)) as u64
            } else {
                // The first size whose running percentage is above the
                // draw (r / 2^32 < running / 100), skipping those that do
                // not fit.
                let mut pick = self.split[self.split.len() - 1].0;
                for &(b, run) in &self.split {
                    pick = b;
                    if r * 100 < run << 32 && b <= room {
                        break;
                    }
                }
                pick
            };
            len -= len % self.min;
            len = len.min(self.max);
            if len >= self.min && len <= room {
                return len;
            }
            if room < self.min * 2 {
                return self.min;
            }
        }
    }

    fn is_set(&self, b: u64) -> bool {
        let m = self.map.as_ref().expect("random walk");
        m[(b / 64) as usize] & (1 << (b % 64)) != 0
    }

    /// The first untouched block at or after `b`, wrapping round.
    fn free_from(&self, b: u64) -> u64 {
        let m = self.map.as_ref().expect("random walk");
        let mut i = b;
        loop {
            let word = m[(i / 64) as usize] | ((1u64 << (i % 64)) - 1);
            if word != u64::MAX {
                let f = (i / 64) * 64 + u64::from((!word).trailing_zeros());
                if f < self.blocks {
                    return f;
                }
            }
            i = ((i / 64) + 1) * 64;
            if i >= self.blocks {
                i = 0;
            }
        }
    }

    /// Marks up to `n` blocks from `b` touched, stopping at one already
    /// touched; returns how many it marked (at least 1).
    fn mark(&mut self, b: u64, n: u64) -> u64 {
        let mut k = 0;
        while k < n && b + k < self.blocks && !self.is_set(b + k) {
            let i = b + k;
            self.map.as_mut().expect("random walk")[(i / 64) as usize] |= 1 << (i % 64);
            k += 1;
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(z: &XferSizes, region: u64, random: bool) -> Vec<(u64, u32)> {
        let mut g = SizeGen::new(z, region, random, 7);
        std::iter::from_fn(|| g.next_request()).collect()
    }

    #[test]
    fn every_byte_once_in_range() {
        let range = XferSizes {
            min: 4096,
            max: 65536,
            split: vec![],
        };
        let split = XferSizes {
            min: 4096,
            max: 65536,
            split: vec![(4096, 30), (16384, 50), (65536, 20)],
        };
        for z in [&range, &split] {
            for random in [false, true] {
                for region in [4 << 20, 1_024_000, 4096, 0, 4095] {
                    let w = walk(z, region, random);
                    let mut seen = vec![false; (region / 4096) as usize];
                    for &(o, l) in &w {
                        assert!((4096..=65536).contains(&l) && l % 4096 == 0, "{l}");
                        assert_eq!(o % 4096, 0);
                        for b in o / 4096..(o + l as u64) / 4096 {
                            assert!(!seen[b as usize], "block {b} twice");
                            seen[b as usize] = true;
                        }
                    }
                    assert!(seen.iter().all(|&s| s), "{z:?} {random} {region}");
                    if !random {
                        assert!(w.windows(2).all(|p| p[0].0 + p[0].1 as u64 == p[1].0));
                    }
                }
            }
        }
    }

    #[test]
    fn split_follows_the_percentages() {
        let z = XferSizes {
            min: 4096,
            max: 65536,
            split: vec![(4096, 30), (16384, 50), (65536, 20)],
        };
        let w = walk(&z, 1 << 30, false);
        let share = |s: u32| w.iter().filter(|r| r.1 == s).count() as f64 / w.len() as f64;
        for (s, p) in [(4096, 0.3), (16384, 0.5), (65536, 0.2)] {
            assert!((share(s) - p).abs() < 0.02, "{s}: {}", share(s));
        }
        // bsrange: every multiple alike.
        let z = XferSizes {
            min: 4096,
            max: 65536,
            split: vec![],
        };
        let w = walk(&z, 1 << 30, false);
        for k in 1..=16u32 {
            let n = w.iter().filter(|r| r.1 == k * 4096).count() as f64 / w.len() as f64;
            assert!((n - 1.0 / 16.0).abs() < 0.01, "{k}: {n}");
        }
    }
}
