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
    word(file_key(seed, file), offset)
}

/// What every word of one file shares: the seed mixed with the file number.
#[inline(always)]
fn file_key(seed: u64, file: u64) -> u64 {
    seed ^ file.wrapping_mul(0xA24B_AED4_963E_E407)
}

/// The word at `offset` of the file whose key is `key`: one step of
/// splitmix64 from the state `key ^ offset`. Words do not depend on each
/// other, so a loop over them keeps several in flight at once.
#[inline(always)]
fn word(key: u64, offset: u64) -> u64 {
    let mut s = key ^ offset;
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
    let key = file_key(seed, file);
    let mut chunks = buf[head..].chunks_exact_mut(8);
    let mut off = offset + head as u64;
    for c in &mut chunks {
        c.copy_from_slice(&word(key, off).to_le_bytes());
        off += 8;
    }
    let rem = chunks.into_remainder();
    if !rem.is_empty() {
        let w = word(key, off).to_le_bytes();
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
    let key = file_key(seed, file);
    let mut off = offset + head as u64;
    // Whole words are compared as integers, a block at a time without a
    // branch (a byte-slice comparison per word made the check 15x slower
    // than the reads it checks); only a block that differs is looked at
    // byte by byte.
    let mut blocks = buf[head..].chunks_exact(BLOCK);
    for blk in &mut blocks {
        let blk: &[u8; BLOCK] = blk.try_into().expect("chunks_exact gives BLOCK bytes");
        let mut diff = 0u64;
        for i in 0..BLOCK / 8 {
            let c = &blk[8 * i..8 * i + 8];
            diff |= le_word(c) ^ word(key, off + 8 * i as u64);
        }
        if diff != 0 {
            tally_words(blk, key, off, &mut out);
        }
        off += BLOCK as u64;
    }
    tally_words(blocks.remainder(), key, off, &mut out);
    out
}

/// Bytes compared per branch in [`check`].
const BLOCK: usize = 256;

/// The little-endian word in the 8 bytes of `c`.
#[inline(always)]
fn le_word(c: &[u8]) -> u64 {
    u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
}

/// Compares `buf`, which starts at the word boundary `off`, word by word and
/// counts the differing bytes into `out`.
fn tally_words(buf: &[u8], key: u64, off: u64, out: &mut Check) {
    for (i, c) in buf.chunks(8).enumerate() {
        let at = off + 8 * i as u64;
        let want = word(key, at).to_le_bytes();
        if c != &want[..c.len()] {
            tally(c, &want[..c.len()], at, out);
        }
    }
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
    fn every_flipped_byte_is_found_at_its_offset() {
        // 1,000 bytes from offset 3: a 5-byte head, three whole blocks, and
        // a remainder that ends inside a word.
        let mut good = vec![0u8; 1000];
        fill(&mut good, 7, 11, 3);
        for at in 0..good.len() {
            let mut b = good.clone();
            b[at] ^= 0x10;
            let c = check(&b, 7, 11, 3);
            assert_eq!((c.bad_bytes, c.first_bad), (1, Some(3 + at as u64)), "{at}");
        }
        let mut b = good.clone();
        for at in [1, 300, 301, 998] {
            b[at] = !b[at];
        }
        let c = check(&b, 7, 11, 3);
        assert_eq!((c.bad_bytes, c.first_bad), (4, Some(4)));
    }

    #[test]
    fn odd_lengths() {
        let mut b = vec![0u8; 13];
        fill(&mut b, 1, 1, 0);
        assert_eq!(check(&b, 1, 1, 0).bad_bytes, 0);
    }
}
