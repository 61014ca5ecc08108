//! Data written by ioscale, and the check of what is read back.
//!
//! Without `--verify` a buffer is filled once with pseudo-random bytes so
//! that compressing or deduplicating storage cannot flatter the figures.
//! With `--verify` every 8-byte word encodes the file, its offset and the
//! seed, so a read can tell exactly which byte is wrong and where, even when
//! a block landed at the wrong offset or in the wrong file.

use crate::offsets::splitmix64;

/// The word expected at byte `offset` (a multiple of 8) of file `file`.
#[inline]
pub fn word_at(seed: u64, file: u64, offset: u64) -> u64 {
    let mut s = seed ^ file.wrapping_mul(0xA24B_AED4_963E_E407) ^ offset;
    splitmix64(&mut s)
}

/// Fills `buf` with the verify pattern for `file` starting at `offset`.
///
/// Byte `p` of a file is always byte `p % 8` of the word at `p - p % 8`,
/// whatever the transfer size: a file written with one `--xfer` verifies
/// when read back with another, even when transfers are not multiples of 8
/// (buffered I/O allows any size).
pub fn fill(buf: &mut [u8], seed: u64, file: u64, offset: u64) {
    let head = head_len(offset, buf.len());
    if head > 0 {
        let skip = (offset % 8) as usize;
        let w = word_at(seed, file, offset - skip as u64).to_le_bytes();
        buf[..head].copy_from_slice(&w[skip..skip + head]);
    }
    let mut chunks = buf[head..].chunks_exact_mut(8);
    let mut off = offset + head as u64;
    for c in &mut chunks {
        c.copy_from_slice(&word_at(seed, file, off).to_le_bytes());
        off += 8;
    }
    let rem = chunks.into_remainder();
    if !rem.is_empty() {
        let w = word_at(seed, file, off).to_le_bytes();
        rem.copy_from_slice(&w[..rem.len()]);
    }
}

/// Bytes from `offset` up to the file's next 8-byte boundary, at most `len`.
#[inline]
fn head_len(offset: u64, len: usize) -> usize {
    (((8 - offset % 8) % 8) as usize).min(len)
}

/// The result of checking one buffer against the verify pattern.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Check {
    /// Bytes that differ from the pattern.
    pub bad_bytes: u64,
    /// File offset of the first differing byte.
    pub first_bad: Option<u64>,
}

/// Compares `buf` with the pattern `fill` would write there.
pub fn check(buf: &[u8], seed: u64, file: u64, offset: u64) -> Check {
    let mut out = Check::default();
    let head = head_len(offset, buf.len());
    if head > 0 {
        let skip = (offset % 8) as usize;
        let want = word_at(seed, file, offset - skip as u64).to_le_bytes();
        tally(&buf[..head], &want[skip..skip + head], offset, &mut out);
    }
    let mut off = offset + head as u64;
    for c in buf[head..].chunks(8) {
        let want = word_at(seed, file, off).to_le_bytes();
        if c != &want[..c.len()] {
            tally(c, &want[..c.len()], off, &mut out);
        }
        off += 8;
    }
    out
}

/// Counts the differing bytes of `got` (file offset `off`) into `out`.
fn tally(got: &[u8], want: &[u8], off: u64, out: &mut Check) {
    for (i, (a, b)) in got.iter().zip(want.iter()).enumerate() {
        if a != b {
            out.bad_bytes += 1;
            out.first_bad.get_or_insert(off + i as u64);
        }
    }
}

/// Fills `buf` with seeded pseudo-random bytes (the non-verify payload).
pub fn fill_random(buf: &mut [u8], seed: u64) {
    let mut s = seed;
    for c in buf.chunks_mut(8) {
        let w = splitmix64(&mut s).to_le_bytes();
        c.copy_from_slice(&w[..c.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_detection() {
        let mut b = vec![0u8; 4096];
        fill(&mut b, 9, 3, 8192);
        assert_eq!(check(&b, 9, 3, 8192), Check::default());
        // Wrong offset, wrong file, wrong seed: all detected.
        assert!(check(&b, 9, 3, 0).bad_bytes > 4000);
        assert!(check(&b, 9, 4, 8192).bad_bytes > 4000);
        assert!(check(&b, 8, 3, 8192).bad_bytes > 4000);
        b[100] ^= 1;
        let c = check(&b, 9, 3, 8192);
        assert_eq!(c.bad_bytes, 1);
        assert_eq!(c.first_bad, Some(8192 + 100));
    }

    #[test]
    fn pattern_does_not_depend_on_the_transfer_size() {
        let mut whole = vec![0u8; 2002];
        fill(&mut whole, 5, 2, 0);
        let mut parts = vec![0u8; 2002];
        for (i, c) in parts.chunks_mut(1001).enumerate() {
            fill(c, 5, 2, i as u64 * 1001);
        }
        assert_eq!(whole, parts);
        assert_eq!(check(&whole[3..1004], 5, 2, 3), Check::default());
        let mut b = whole[3..1004].to_vec();
        b[2] ^= 0xff;
        let c = check(&b, 5, 2, 3);
        assert_eq!((c.bad_bytes, c.first_bad), (1, Some(5)));
    }

    #[test]
    fn odd_lengths() {
        let mut b = vec![0u8; 13];
        fill(&mut b, 1, 1, 0);
        assert_eq!(check(&b, 1, 1, 0).bad_bytes, 0);
    }
}
