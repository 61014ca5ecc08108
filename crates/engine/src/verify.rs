//! fio's verify blocks: each written block starts with fio's verify header
//! and a checksum of the rest of the block, which holds seeded random
//! data; a block read back is checked against both.
//!
//! The layout is fio's (verify.h): a 40-byte header — magic `0xacca`
//! (u16), the checksum type (u16, fio's numbering), the block's length
//! (u32), the data's seed (u64), the block's file offset (u64), the write
//! time (two u32), the worker (u16), the request's number (u16), and a
//! CRC-32C of the 36 bytes before it — then the checksum's own bytes,
//! then the data. A block is `interval` bytes (fio's `verify_interval`,
//! by default the block size); a request holds one or more.
//!
//! Filling a block and checking it each cost one pass over its bytes with
//! the hash, as fio's do; nothing is allocated.

use std::time::{SystemTime, UNIX_EPOCH};

use md5::Digest as _;
use spec::Checksum;

use crate::pattern;

/// fio's header magic.
pub const MAGIC: u16 = 0xacca;
/// Bytes of fio's header before the checksum.
pub const HEADER: usize = 40;

/// fio's number for the checksum type (`enum` in verify.h).
pub fn type_code(c: Checksum) -> u16 {
    match c {
        Checksum::Md5 => 2,
        Checksum::Crc32c => 5,
        Checksum::Crc32cIntel => 6,
        Checksum::Xxhash => 15,
        Checksum::Sha1 => 16,
    }
}

/// The checksum's room after the header (fio's `vhdr_*` sizes).
pub fn sum_len(c: Checksum) -> usize {
    match c {
        Checksum::Md5 => 16,
        Checksum::Crc32c | Checksum::Crc32cIntel | Checksum::Xxhash => 4,
        Checksum::Sha1 => 20,
    }
}

/// Header and checksum: the smallest block that holds data too is one
/// byte longer.
pub fn overhead(c: Checksum) -> usize {
    HEADER + sum_len(c)
}

/// Who wrote a request, for its headers.
#[derive(Debug, Clone, Copy)]
pub struct Writer {
    /// The checksum.
    pub sum: Checksum,
    /// Block size within a request (fio's `verify_interval`).
    pub interval: usize,
    /// The worker, as fio's thread number.
    pub thread: u16,
    /// The seed of the data.
    pub seed: u64,
}

/// Writes fio's verify blocks over `buf`, a request at file offset
/// `offset` whose number in the worker's writes is `numberio`.
pub fn fill(buf: &mut [u8], offset: u64, numberio: u64, w: &Writer) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut at = 0usize;
    while at < buf.len() {
        let len = w.interval.min(buf.len() - at);
        let block = &mut buf[at..at + len];
        let off = offset + at as u64;
        let seed = w.seed ^ off.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let head = overhead(w.sum).min(len);
        pattern::fill_random(&mut block[head..], seed);
        if len >= HEADER {
            write_header(block, w, off, seed, numberio, now);
            let (front, data) = block.split_at_mut(head);
            sum_into(w.sum, data, &mut front[HEADER..]);
        }
        at += len;
    }
}

fn write_header(
    b: &mut [u8],
    w: &Writer,
    off: u64,
    seed: u64,
    numberio: u64,
    now: std::time::Duration,
) {
    b[0..2].copy_from_slice(&MAGIC.to_le_bytes());
    b[2..4].copy_from_slice(&type_code(w.sum).to_le_bytes());
    let len = b.len() as u32;
    b[4..8].copy_from_slice(&len.to_le_bytes());
    b[8..16].copy_from_slice(&seed.to_le_bytes());
    b[16..24].copy_from_slice(&off.to_le_bytes());
    b[24..28].copy_from_slice(&(now.as_secs() as u32).to_le_bytes());
    b[28..32].copy_from_slice(&now.subsec_nanos().to_le_bytes());
    b[32..34].copy_from_slice(&w.thread.to_le_bytes());
    b[34..36].copy_from_slice(&(numberio as u16).to_le_bytes());
    let crc = fio_crc32c(&b[..36]);
    b[36..40].copy_from_slice(&crc.to_le_bytes());
}

/// fio's CRC-32C: the Castagnoli polynomial from an all-ones register,
/// without the final inversion of the standard one (fio's crc32c_sw and
/// crc32c_intel both return the register as it is).
#[inline]
pub fn fio_crc32c(data: &[u8]) -> u32 {
    !crc32c::crc32c(data)
}

/// The checksum of `data` into `out` (its [`sum_len`] bytes).
fn sum_into(c: Checksum, data: &[u8], out: &mut [u8]) {
    match c {
        Checksum::Crc32c | Checksum::Crc32cIntel => {
            out[..4].copy_from_slice(&fio_crc32c(data).to_le_bytes())
        }
        Checksum::Xxhash => {
            out[..4].copy_from_slice(&xxhash_rust::xxh32::xxh32(data, 1).to_le_bytes())
        }
        Checksum::Md5 => out[..16].copy_from_slice(&md5::Md5::digest(data)),
        Checksum::Sha1 => {
            // fio keeps SHA-1's five words in host order (little-endian).
            let d = sha1::Sha1::digest(data);
            for (o, w) in out[..20].chunks_mut(4).zip(d.chunks(4)) {
                o.copy_from_slice(&[w[3], w[2], w[1], w[0]]);
            }
        }
    }
}

/// What a check of one request found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Found {
    /// Bytes of the blocks that failed.
    pub bad_bytes: u64,
    /// File offset of the first block that failed, and why.
    pub first_bad: Option<(u64, &'static str)>,
}

/// Checks the request read at `offset` into `buf`: each block's header
/// (magic, type, length, offset, its CRC) and its checksum.
pub fn check(buf: &[u8], offset: u64, sum: Checksum, interval: usize) -> Found {
    let mut f = Found::default();
    let mut at = 0usize;
    let mut room = [0u8; 64];
    while at < buf.len() {
        let len = interval.min(buf.len() - at);
        let block = &buf[at..at + len];
        let off = offset + at as u64;
        if let Some(why) = check_block(block, off, sum, &mut room) {
            f.bad_bytes += len as u64;
            f.first_bad.get_or_insert((off, why));
        }
        at += len;
    }
    f
}

fn check_block(b: &[u8], off: u64, sum: Checksum, room: &mut [u8; 64]) -> Option<&'static str> {
    if b.len() < HEADER {
        return None;
    }
    let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    if u16_at(0) != MAGIC {
        return Some("bad magic in the verify header");
    }
    if u32_at(36) != fio_crc32c(&b[..36]) {
        return Some("the verify header's own CRC does not match");
    }
    if u16_at(2) != type_code(sum) {
        return Some("the verify header names another checksum");
    }
    if u32_at(4) as usize != b.len() {
        return Some("the verify header's length is not the block's");
    }
    if u64_at(16) != off {
        return Some("the verify header's offset is not the block's");
    }
    let head = overhead(sum).min(b.len());
    let data = &b[head..];
    let n = sum_len(sum);
    sum_into(sum, data, &mut room[..n]);
    (room[..n] != b[HEADER..HEADER + n]).then_some("checksum mismatch")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Checksum; 5] = [
        Checksum::Crc32c,
        Checksum::Crc32cIntel,
        Checksum::Md5,
        Checksum::Sha1,
        Checksum::Xxhash,
    ];

    #[test]
    fn a_filled_request_checks_and_any_flipped_byte_is_found_with_its_block() {
        for sum in ALL {
            let w = Writer {
                sum,
                interval: 4096,
                thread: 3,
                seed: 77,
            };
            let mut buf = vec![0u8; 16384];
            fill(&mut buf, 1 << 20, 9, &w);
            assert_eq!(u16::from_le_bytes([buf[0], buf[1]]), MAGIC, "{sum:?}");
            assert_eq!(check(&buf, 1 << 20, sum, 4096), Found::default(), "{sum:?}");
            // Read back at another offset: the header says where it was.
            let f = check(&buf, 2 << 20, sum, 4096);
            assert_eq!(f.bad_bytes, 16384, "{sum:?}");
            // One data byte of the third block.
            let mut bad = buf.clone();
            bad[2 * 4096 + 1000] ^= 1;
            let f = check(&bad, 1 << 20, sum, 4096);
            assert_eq!(f.bad_bytes, 4096, "{sum:?}");
            assert_eq!(f.first_bad.map(|x| x.0), Some((1 << 20) + 8192), "{sum:?}");
            // One header byte.
            let mut bad = buf.clone();
            bad[4096 + 5] ^= 0x10;
            assert_eq!(check(&bad, 1 << 20, sum, 4096).bad_bytes, 4096, "{sum:?}");
        }
    }

    #[test]
    fn known_digests_are_the_standard_ones() {
        let mut out = [0u8; 64];
        // The standard check value, inverted (fio's register as it is).
        sum_into(Checksum::Crc32c, b"123456789", &mut out);
        assert_eq!(
            u32::from_le_bytes(out[..4].try_into().unwrap()),
            !0xe306_9283
        );
        sum_into(Checksum::Md5, b"", &mut out);
        assert_eq!(out[..4], [0xd4, 0x1d, 0x8c, 0xd9]);
        sum_into(Checksum::Sha1, b"abc", &mut out);
        assert_eq!(out[..4], [0x36, 0x3e, 0x99, 0xa9]);
        sum_into(Checksum::Xxhash, b"", &mut out);
        // XXH32 of nothing with seed 1.
        assert_eq!(
            u32::from_le_bytes(out[..4].try_into().unwrap()),
            xxhash_rust::xxh32::xxh32(b"", 1)
        );
    }
}
