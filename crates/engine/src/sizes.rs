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

//!
//! A mixed phase walks as fio's rw/randrw do with sizes drawn or sizes per
//! direction (`bs=R,W`): the direction is drawn first, then the size from
//! that direction's list; sequentially each direction has its own position
//! from the region's start and the walk ends once the bytes of both reach
//! the region (or the next request of a direction no longer fits), as
//! fio's total does; at random both share one map of blocks of the
//! smaller minimum.

use spec::XferSizes;

use crate::offsets::splitmix64;

/// How one direction draws its sizes.
#[derive(Debug, Clone)]
struct Draw {
    min: u64,
    max: u64,
    /// `bssplit`: (size, running percentage).
    split: Vec<(u64, u64)>,
}

impl Draw {
    fn of(z: &XferSizes) -> Draw {
        let min = z.min.max(1);
        let mut run = 0u64;
        let split = z
            .split
            .iter()
            .map(|&(b, p)| {
                run += u64::from(p);
                (b, run)
            })
            .collect();
        Draw {
            min,
            max: z.max.max(min),
            split,
        }
    }
}

/// A walk over one worker's region with drawn request sizes.
#[derive(Debug, Clone)]
pub struct SizeGen {
    /// Reads', writes' draws (the same for a walk of one direction).
    dirs: [Draw; 2],
    /// The unit of offsets: the smaller minimum.
    unit: u64,
    rng: u64,
    /// Blocks of `unit` bytes in the region.
    blocks: u64,
    /// Sequential: the next block, per direction. Random: unused.
    next: [u64; 2],
    /// Random: blocks not yet touched.
    left: u64,
    /// Sequential, both directions: bytes still to issue (the region's);
    /// `None` for a walk of one direction.
    budget: Option<u64>,
    /// Random: one bit per block, set once touched.
    map: Option<Vec<u64>>,
}

impl SizeGen {
    /// A walk over `region` bytes, in order or at random, seeded.
    pub fn new(z: &XferSizes, region: u64, random: bool, seed: u64) -> Self {
        Self::build([Draw::of(z), Draw::of(z)], region, random, seed, None)
    }

    /// A mixed phase's walk, reads drawing from `read` and writes from
    /// `write` ([`SizeGen::next_for`]).
    pub fn mixed(
        read: &XferSizes,
        write: &XferSizes,
        region: u64,
        random: bool,
        seed: u64,
    ) -> Self {
        let dirs = [Draw::of(read), Draw::of(write)];
        let unit = dirs[0].min.min(dirs[1].min);
        Self::build(dirs, region, random, seed, Some(region / unit * unit))
    }

    fn build(dirs: [Draw; 2], region: u64, random: bool, seed: u64, budget: Option<u64>) -> Self {
        let unit = dirs[0].min.min(dirs[1].min);
        let blocks = region / unit;
        SizeGen {
            dirs,
            unit,
            rng: seed ^ 0xb5b5_1e57,
            blocks,
            next: [0; 2],
            left: blocks,
            budget,
            map: random.then(|| vec![0u64; blocks.div_ceil(64) as usize]),
        }
    }

    /// The next request as (offset in the region, length), or `None` when
    /// the walk is done.
    pub fn next_request(&mut self) -> Option<(u64, u32)> {
        self.next_for(false)
    }

    /// The next request of direction `write` (a read when false) as
    /// (offset in the region, length), or `None` when the walk is done.
    pub fn next_for(&mut self, write: bool) -> Option<(u64, u32)> {
        let d = usize::from(write);
        if self.budget == Some(0) {
            return None;
        }
        if self.map.is_none() {
            let room = (self.blocks - self.next[d]) * self.unit;
            if room < self.dirs[d].min {
                return None;
            }
            let len = self.draw(d, room);
            let off = self.next[d] * self.unit;
            self.next[d] += len / self.unit;
            self.budget = self.budget.map(|b| b.saturating_sub(len));
            return Some((off, len as u32));
        }
        self.next_random(d)
    }

    /// The next request of a random walk, as fio 3.33 picks it: a block
    /// number below `region ÷ min` of the direction, or the next free one
    /// if it is taken; the offset is that number times the direction's
    /// minimum (its `blockalign`), while the map is indexed by the number
    /// itself, in blocks of the smaller minimum. With one size both ways
    /// the two are the same; with different sizes a direction's numbers
    /// meet the other's bits where they do not share bytes, and the walk
    /// ends when the number found lies past the region — fio's map does
    /// exactly this (`mark_random_map` with `min_bs[ddir]`), which is why
    /// a randrw job with `bs=4k,64k` moves less than its size in fio.
    fn next_random(&mut self, d: usize) -> Option<(u64, u32)> {
        if self.left == 0 {
            return None;
        }
        let min = self.dirs[d].min;
        let k = min / self.unit;
        let lastb = self.blocks / k;
        if lastb == 0 {
            return None;
        }
        let pick = ((u128::from(splitmix64(&mut self.rng)) * u128::from(lastb)) >> 64) as u64;
        let b = self.free_from(pick);
        if b >= lastb {
            return None;
        }
        let len = self.draw(d, self.blocks * self.unit - b * min);
        let n = self.mark(b, len.div_ceil(min));
        self.left -= n;
        let len = len.min(n * min);
        self.budget = self.budget.map(|x| x.saturating_sub(len));
        Some((b * min, len as u32))
    }

    /// One size of direction `d` that fits in `room` bytes (at least its
    /// minimum), drawn as fio draws it.
    fn draw(&mut self, d: usize, room: u64) -> u64 {
        let Draw {
            min,
            max,
            ref split,
        } = self.dirs[d];
        loop {
            let r = splitmix64(&mut self.rng) >> 32;
            let mut len = if split.is_empty() {
                min + ((max as f64) * (r as f64 / 4_294_967_296.0)) as u64
            } else {
                // The first size whose running percentage is above the
                // draw (r / 2^32 < running / 100), skipping those that do
                // not fit.
                let mut pick = split[split.len() - 1].0;
                for &(b, run) in split {
                    pick = b;
                    if r * 100 < run << 32 && b <= room {
                        break;
                    }
                }
                pick
            };
            len -= len % min;
            len = len.min(max);
            if len >= min && len <= room {
                return len;
            }
            if room < min * 2 {
                return min;
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

    fn fixed(b: u64) -> XferSizes {
        XferSizes {
            min: b,
            max: b,
            split: vec![],
        }
    }

    /// A mixed walk with reads of 4 KiB and writes of 64 KiB, the
    /// directions alternating two reads to one write.
    fn mixed_walk(random: bool, region: u64) -> Vec<(bool, u64, u32)> {
        let mut g = SizeGen::mixed(&fixed(4096), &fixed(65536), region, random, 3);
        let mut out = Vec::new();
        for i in 0.. {
            let write = i % 3 == 2;
            match g.next_for(write) {
                Some((o, l)) => out.push((write, o, l)),
                None => break,
            }
        }
        out
    }

    #[test]
    fn mixed_sequential_walks_each_direction_from_the_start() {
        for region in [1 << 20, 1_000_000, 65536, 4096] {
            let w = mixed_walk(false, region);
            let total: u64 = w.iter().map(|r| u64::from(r.2)).sum();
            let whole = region / 4096 * 4096;
            // Until the bytes of both reach the region, as fio's total.
            assert!(total >= whole && total < whole + 65536, "{region}: {total}");
            for write in [false, true] {
                let mine: Vec<_> = w.iter().filter(|r| r.0 == write).collect();
                let size = if write { 65536 } else { 4096 };
                let mut at = 0;
                for r in mine {
                    assert_eq!((r.1, u64::from(r.2)), (at, size), "{region} {write}");
                    at += size;
                    assert!(at <= region);
                }
            }
        }
        // 1 MiB: the writes reach the end after 16; the walk stops there.
        // 1 MiB: 14 rounds of 72 KiB, then two reads and a write.
        let w = mixed_walk(false, 1 << 20);
        assert_eq!(w.iter().filter(|r| r.0).count(), 15);
        assert_eq!(w.iter().filter(|r| !r.0).count(), 30);
        // 100 KiB: the second write no longer fits, which ends the walk
        // short of the region (fio ends its job there too).
        let w = mixed_walk(false, 102_400);
        let total: u64 = w.iter().map(|r| u64::from(r.2)).sum();
        assert_eq!((w.len(), total), (5, 81_920));
    }

    #[test]
    fn mixed_random_walk_with_one_list_moves_every_byte_once() {
        let z = XferSizes {
            min: 4096,
            max: 65536,
            split: vec![(4096, 50), (65536, 50)],
        };
        for region in [1 << 20, 1_000_000, 4096, 0] {
            let mut g = SizeGen::mixed(&z, &z, region, true, 5);
            let mut seen = vec![false; (region / 4096) as usize];
            for i in 0.. {
                let Some((o, l)) = g.next_for(i % 2 == 0) else {
                    break;
                };
                assert!(l % 4096 == 0 && (4096..=65536).contains(&l), "{l}");
                for b in o / 4096..(o + u64::from(l)) / 4096 {
                    assert!(!seen[b as usize], "block {b} twice");
                    seen[b as usize] = true;
                }
            }
            assert!(seen.iter().all(|&s| s), "{region}");
        }
    }

    #[test]
    fn mixed_random_walk_with_sizes_per_direction_is_fios() {
        // Each direction's offsets are multiples of its own size and no
        // request is cut: fio's map is indexed by offset ÷ the request's
        // own size, so a write marks one bit.
        for region in [1 << 20, 16 << 20, 1_000_000] {
            let w = mixed_walk(true, region);
            let total: u64 = w.iter().map(|r| u64::from(r.2)).sum();
            assert!(total <= region && !w.is_empty(), "{region}: {total}");
            for &(write, o, l) in &w {
                let size = if write { 65536 } else { 4096 };
                assert_eq!((o % size, u64::from(l)), (0, size), "{region}");
                assert!(o + size <= region);
            }
            let writes = w.iter().filter(|r| r.0).count();
            let mut offs: Vec<u64> = w.iter().filter(|r| r.0).map(|r| r.1).collect();
            offs.sort_unstable();
            offs.dedup();
            assert_eq!(offs.len(), writes, "a write offset twice");
        }
    }
}
