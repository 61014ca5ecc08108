//! The floor for `ioscale meta`: the same system calls in a bare loop, no
//! timing per file, no counters, no histogram.
//!
//! Usage: bare_meta OP DIR THREADS FILES [SIZE]
//!   OP is create (open O_CREAT|O_EXCL + write SIZE bytes + close), stat
//!   (fstatat) or delete (unlinkat). Each thread works in DIR/thr.NNN (made
//!   before the clock starts, as ioscale does) on names f{thread}.{index},
//!   the names ioscale uses, so a tree one tool made can be stat'ed or
//!   deleted by the other. SIZE defaults to 4096.
//!
//! Prints one line: `op=OP files=N elapsed_s=T files_per_s=R`, where the
//! time runs from the release of all threads to the last one's finish.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::Instant;

fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim().to_ascii_lowercase();
    let (num, mult) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 1u64 << 10),
        'm' => (&s[..s.len() - 1], 1u64 << 20),
        _ => (&s[..], 1u64),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// Decimal digits without formatting machinery, as ioscale does.
fn push_u64(out: &mut Vec<u8>, v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    let mut x = v;
    loop {
        i -= 1;
        tmp[i] = b'0' + (x % 10) as u8;
        x /= 10;
        if x == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: bare_meta create|stat|delete DIR THREADS FILES [SIZE]");
        return ExitCode::from(2);
    }
    let op = args[1].clone();
    let dir = std::path::PathBuf::from(&args[2]);
    let threads: u32 = args[3].parse().expect("THREADS");
    let files: u64 = args[4].parse().expect("FILES");
    let size = args.get(5).and_then(|s| parse_size(s)).unwrap_or(4096) as usize;
    if !matches!(op.as_str(), "create" | "stat" | "delete") {
        eprintln!("bare_meta: unknown op {op}");
        return ExitCode::from(2);
    }
    let buf = vec![0x5au8; size.max(1)];
    let barrier = Barrier::new(threads as usize + 1);
    let mut t0 = Instant::now();
    let failed = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|w| {
                let (dir, op, buf, barrier) = (&dir, &op, &buf, &barrier);
                scope.spawn(move || {
                    let d = dir.join(format!("thr.{w:03}"));
                    if op == "create" {
                        let _ = std::fs::create_dir(&d);
                    }
                    let c = CString::new(d.as_os_str().as_bytes()).unwrap();
                    // SAFETY: valid C string.
                    let dfd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
                    let mut name = Vec::with_capacity(64);
                    barrier.wait();
                    if dfd < 0 {
                        return 1u64;
                    }
                    let mut bad = 0u64;
                    for i in 0..files {
                        name.clear();
                        name.push(b'f');
                        push_u64(&mut name, w as u64);
                        name.push(b'.');
                        push_u64(&mut name, i);
                        name.push(0);
                        let p = name.as_ptr().cast::<libc::c_char>();
                        // SAFETY: `name` is NUL-terminated; the buffers
                        // passed are valid for the lengths given.
                        unsafe {
                            match op.as_str() {
                                "create" => {
                                    let fd = libc::openat(
                                        dfd,
                                        p,
                                        libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY,
                                        0o644 as libc::c_uint,
                                    );
                                    if fd < 0 {
                                        bad += 1;
                                        continue;
                                    }
                                    if size > 0
                                        && libc::write(fd, buf.as_ptr().cast(), size)
                                            != size as isize
                                    {
                                        bad += 1;
                                    }
                                    libc::close(fd);
                                }
                                "stat" => {
                                    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
                                    if libc::fstatat(
                                        dfd,
                                        p,
                                        st.as_mut_ptr(),
                                        libc::AT_SYMLINK_NOFOLLOW,
                                    ) != 0
                                    {
                                        bad += 1;
                                    }
                                }
                                _ => {
                                    if libc::unlinkat(dfd, p, 0) != 0 {
                                        bad += 1;
                                    }
                                }
                            }
                        }
                    }
                    // SAFETY: closing the descriptor opened above.
                    unsafe { libc::close(dfd) };
                    bad
                })
            })
            .collect();
        barrier.wait();
        t0 = Instant::now();
        handles.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    let el = t0.elapsed().as_secs_f64();
    if op == "delete" {
        for w in 0..threads {
            let _ = std::fs::remove_dir(dir.join(format!("thr.{w:03}")));
        }
    }
    let n = files * threads as u64;
    println!(
        "op={op} files={n} elapsed_s={el:.6} files_per_s={:.1}",
        n as f64 / el
    );
    if failed > 0 {
        eprintln!("bare_meta: {failed} calls failed");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
