//! The kernel's binary trace pages (`per_cpu/cpuN/trace_pipe_raw`), read
//! for the two FUSE request events.
//!
//! Reading `trace_pipe` makes the kernel print every event as text, which
//! cost about 6 µs of system time per event here: on a FUSE mount written
//! in 4 KiB requests that tripled the writer's CPU time per write. The raw
//! pages are copied out whole instead, and decoded here, as their format
//! files describe them:
//!
//! - a page (`events/header_page`): a 64-bit time stamp, a `commit` word
//!   whose low 30 bits are the bytes of event data on the page (bits 30
//!   and 31 flag lost events), then the data;
//! - each entry (`events/header_event`): a 32-bit word, `type_len` in the
//!   low 5 bits and `time_delta` (added to the running time stamp) in the
//!   other 27, then the payload: `type_len` × 4 bytes for 1..=28, or for 0
//!   a 32-bit length (counting itself) and the payload; 29 is padding (the
//!   rest of the page when `time_delta` is 0, else a discarded entry of
//!   4 + `array[0]` bytes whose `time_delta` only marks it, as the kernel's
//!   reader ignores it too), 30 extends the time delta by
//!   `array[0] << 27`, 31 sets an absolute time stamp;
//! - a payload (`events/fuse/EVENT/format`): `common_type` (the event id)
//!   in its first 2 bytes, then the fields at the offsets the format file
//!   gives.
//!
//! Only little-endian machines are decoded (the entry header's bit fields
//! are laid out for them); elsewhere the tracer says so and is not used.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

/// One FUSE request event, decoded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Event {
    /// `fuse_request_send`: the kernel queued a request for the daemon.
    Send {
        /// Trace-clock time, nanoseconds.
        ts: u64,
        unique: u64,
        opcode: u32,
        /// Request length, headers included.
        len: u32,
    },
    /// `fuse_request_end`: the request was answered.
    End {
        ts: u64,
        unique: u64,
        /// Reply length, header included.
        len: u32,
        error: i32,
    },
}

/// Offset and size of one field in an event's payload.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Field {
    offset: usize,
    size: usize,
}

/// What the format files say about the two events.
#[derive(Debug, Clone, Default)]
pub(crate) struct Layout {
    send_id: u16,
    end_id: u16,
    send_unique: Field,
    send_opcode: Field,
    send_len: Field,
    end_unique: Field,
    end_len: Field,
    end_error: Field,
    commit: usize,
    data: usize,
    /// Opcode names from the send event's print format.
    pub(crate) names: HashMap<u32, String>,
}

/// Fields of a format file: name → (offset, size).
fn fields(text: &str) -> HashMap<String, Field> {
    let mut out = HashMap::new();
    for l in text.lines() {
        let Some(rest) = l.trim().strip_prefix("field:") else {
            continue;
        };
        let mut parts = rest.split(';').map(str::trim);
        let Some(decl) = parts.next() else { continue };
        let Some(name) = decl.split_whitespace().last() else {
            continue;
        };
        let mut f = Field::default();
        for p in parts {
            if let Some(v) = p.strip_prefix("offset:") {
                f.offset = v.parse().unwrap_or(0);
            } else if let Some(v) = p.strip_prefix("size:") {
                f.size = v.parse().unwrap_or(0);
            }
        }
        out.insert(name.to_string(), f);
    }
    out
}

/// `{16, "FUSE_WRITE"}` pairs of a `__print_symbolic` list.
fn symbols(text: &str) -> HashMap<u32, String> {
    let mut out = HashMap::new();
    for part in text.split('{').skip(1) {
        let Some((num, rest)) = part.split_once(',') else {
            continue;
        };
        let Ok(n) = num.trim().parse::<u32>() else {
            continue;
        };
        let mut q = rest.split('"');
        if let (Some(_), Some(name)) = (q.next(), q.next()) {
            out.insert(n, name.to_string());
        }
    }
    out
}

impl Layout {
    /// Reads the layout from tracefs at `root`, or says what is missing.
    pub(crate) fn read(root: &Path) -> Result<Layout, String> {
        if cfg!(target_endian = "big") {
            return Err("the raw trace decoder reads little-endian machines only".into());
        }
        let read = |rel: &str| {
            fs::read_to_string(root.join(rel)).map_err(|e| format!("{}/{rel}: {e}", root.display()))
        };
        let page = fields(&read("events/header_page")?);
        let send = read("events/fuse/fuse_request_send/format")?;
        let end = read("events/fuse/fuse_request_end/format")?;
        let id = |t: &str| {
            t.lines()
                .find_map(|l| l.strip_prefix("ID:"))
                .and_then(|v| v.trim().parse::<u16>().ok())
        };
        let (sf, ef) = (fields(&send), fields(&end));
        let want = |m: &HashMap<String, Field>, n: &str, size: usize| {
            m.get(n)
                .copied()
                .filter(|f| f.size == size)
                .ok_or_else(|| format!("unexpected FUSE trace event format: field {n}"))
        };
        Ok(Layout {
            send_id: id(&send).ok_or("no ID in fuse_request_send/format")?,
            end_id: id(&end).ok_or("no ID in fuse_request_end/format")?,
            send_unique: want(&sf, "unique", 8)?,
            send_opcode: want(&sf, "opcode", 4)?,
            send_len: want(&sf, "len", 4)?,
            end_unique: want(&ef, "unique", 8)?,
            end_len: want(&ef, "len", 4)?,
            end_error: want(&ef, "error", 4)?,
            commit: page.get("commit").map_or(8, |f| f.offset),
            data: page.get("data").map_or(16, |f| f.offset),
            names: symbols(send.split("print fmt:").nth(1).unwrap_or("")),
        })
    }

    /// Decodes one page read from `trace_pipe_raw`, appending the FUSE
    /// events on it to `out`.
    pub(crate) fn page(&self, page: &[u8], out: &mut Vec<Event>) {
        let (Some(mut ts), Some(commit)) = (u64_at(page, 0), u64_at(page, self.commit)) else {
            return;
        };
        let len = (commit & 0x3fff_ffff) as usize;
        let end = (self.data + len).min(page.len());
        let mut at = self.data;
        while at + 4 <= end {
            let Some(h) = u32_at(page, at) else { break };
            let (type_len, delta) = (h & 0x1f, u64::from(h >> 5));
            let array = u32_at(page, at + 4).map_or(0, u64::from);
            match type_len {
                29 if delta == 0 => break,
                29 => at += 4 + array as usize,
                30 => {
                    ts += (array << 27) | delta;
                    at += 8;
                }
                31 => {
                    // Absolute: the low 59 bits, above them the page's.
                    ts = (ts & !((1u64 << 59) - 1)) | (array << 27) | delta;
                    at += 8;
                }
                0 => {
                    ts += delta;
                    let n = (array as usize).saturating_sub(4);
                    let n = (n + 3) & !3;
                    if let Some(p) = page.get(at + 8..at + 8 + n) {
                        self.payload(p, ts, out);
                    }
                    at += 8 + n;
                }
                t => {
                    ts += delta;
                    let n = t as usize * 4;
                    if let Some(p) = page.get(at + 4..at + 4 + n) {
                        self.payload(p, ts, out);
                    }
                    at += 4 + n;
                }
            }
        }
    }

    fn payload(&self, p: &[u8], ts: u64, out: &mut Vec<Event>) {
        let u32f = |f: Field| u32_at(p, f.offset);
        let Some(ty) = p.get(..2).map(|b| u16::from_le_bytes([b[0], b[1]])) else {
            return;
        };
        if ty == self.send_id {
            if let (Some(unique), Some(opcode), Some(len)) = (
                u64_at(p, self.send_unique.offset),
                u32f(self.send_opcode),
                u32f(self.send_len),
            ) {
                out.push(Event::Send {
                    ts,
                    unique,
                    opcode,
                    len,
                });
            }
        } else if ty == self.end_id {
            if let (Some(unique), Some(len), Some(error)) = (
                u64_at(p, self.end_unique.offset),
                u32f(self.end_len),
                u32f(self.end_error),
            ) {
                out.push(Event::End {
                    ts,
                    unique,
                    len,
                    error: error as i32,
                });
            }
        }
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The formats of Linux 6.18, as tracefs prints them.
    pub(crate) const SEND: &str = "name: fuse_request_send\nID: 1293\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:dev_t connection;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:uint64_t unique;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:enum fuse_opcode opcode;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:uint32_t len;\toffset:28;\tsize:4;\tsigned:0;\n\nprint fmt: \"connection %u req %llu opcode %u (%s) len %u \", REC->connection, REC->unique, REC->opcode, __print_symbolic(REC->opcode, {15, \"FUSE_READ\"}, {16, \"FUSE_WRITE\"}, {25, \"FUSE_FLUSH\"}), REC->len\n";
    pub(crate) const END: &str = "name: fuse_request_end\nID: 1292\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:dev_t connection;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:uint64_t unique;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:uint32_t len;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:int32_t error;\toffset:28;\tsize:4;\tsigned:1;\n";
    const PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

    /// A tracefs directory holding just the format files.
    pub(crate) fn fake_root() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let ev = d.path().join("events");
        fs::create_dir_all(ev.join("fuse/fuse_request_send")).unwrap();
        fs::create_dir_all(ev.join("fuse/fuse_request_end")).unwrap();
        fs::write(ev.join("header_page"), PAGE).unwrap();
        fs::write(ev.join("fuse/fuse_request_send/format"), SEND).unwrap();
        fs::write(ev.join("fuse/fuse_request_end/format"), END).unwrap();
        d
    }

    fn entry(page: &mut Vec<u8>, type_len: u32, delta: u32, body: &[u8]) {
        page.extend_from_slice(&(type_len | (delta << 5)).to_le_bytes());
        page.extend_from_slice(body);
    }

    fn send(unique: u64, opcode: u32, len: u32) -> Vec<u8> {
        let mut b = vec![0u8; 32];
        b[..2].copy_from_slice(&1293u16.to_le_bytes());
        b[8..12].copy_from_slice(&40u32.to_le_bytes());
        b[16..24].copy_from_slice(&unique.to_le_bytes());
        b[24..28].copy_from_slice(&opcode.to_le_bytes());
        b[28..32].copy_from_slice(&len.to_le_bytes());
        b
    }

    fn end(unique: u64, len: u32, error: i32) -> Vec<u8> {
        let mut b = vec![0u8; 32];
        b[..2].copy_from_slice(&1292u16.to_le_bytes());
        b[16..24].copy_from_slice(&unique.to_le_bytes());
        b[24..28].copy_from_slice(&len.to_le_bytes());
        b[28..32].copy_from_slice(&error.to_le_bytes());
        b
    }

    #[test]
    fn decodes_a_page() {
        let root = fake_root();
        let l = Layout::read(root.path()).unwrap();
        assert_eq!(l.names.get(&16).map(String::as_str), Some("FUSE_WRITE"));
        assert_eq!((l.send_id, l.end_id), (1293, 1292));
        let mut data = Vec::new();
        entry(&mut data, 8, 100, &send(12, 16, 131_152));
        // A time extend of 1 << 27 ns, then an entry 50 ns later.
        entry(&mut data, 30, 0, &1u32.to_le_bytes());
        entry(&mut data, 8, 50, &end(12, 24, 0));
        // A discarded entry (8 bytes of body), then one with a length word.
        entry(&mut data, 29, 7, &8u32.to_le_bytes());
        data.extend_from_slice(&[0u8; 4]);
        let mut long = 36u32.to_le_bytes().to_vec();
        long.extend_from_slice(&end(14, 16, -5));
        entry(&mut data, 0, 5, &long);
        let mut page = 1_000u64.to_le_bytes().to_vec();
        // Bit 31 (events were lost before this page) is not a length.
        page.extend_from_slice(&((data.len() as u64) | 1 << 31).to_le_bytes());
        page.extend_from_slice(&data);
        // The rest of the page: zeros (padding with no delta).
        page.resize(4096, 0);
        let mut out = Vec::new();
        l.page(&page, &mut out);
        let t1 = 1_000 + 100 + (1 << 27) + 50;
        // The discarded entry's delta (7) marks it, it is not time.
        assert_eq!(
            out,
            vec![
                Event::Send {
                    ts: 1_100,
                    unique: 12,
                    opcode: 16,
                    len: 131_152
                },
                Event::End {
                    ts: t1,
                    unique: 12,
                    len: 24,
                    error: 0
                },
                Event::End {
                    ts: t1 + 5,
                    unique: 14,
                    len: 16,
                    error: -5
                },
            ]
        );
    }

    #[test]
    fn a_changed_format_is_refused() {
        let root = fake_root();
        let f = root.path().join("events/fuse/fuse_request_end/format");
        fs::write(&f, END.replace("int32_t error", "int32_t err")).unwrap();
        let e = Layout::read(root.path()).unwrap_err();
        assert!(e.contains("field error"), "{e}");
    }
}
