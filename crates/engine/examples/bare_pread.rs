//! The floor for ioscale's sync random-read loop: pread of one block at a
//! time at shuffled offsets, covering every block of the file once, with no
//! per-operation timing, counting or checking beyond the return value.
//!
//! Usage: bare_pread PATH BLOCK SIZE [SEED]
//!   BLOCK and SIZE in bytes, or with a k/m/g suffix (powers of 1024).
//!
//! The offset list is built and shuffled (Fisher-Yates) before the clock
//! starts. Prints one line: `ops=N bytes=B elapsed_s=T loop_user_s=U
//! loop_sys_s=S`, where the CPU figures cover the timed loop only.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::process::ExitCode;
use std::time::Instant;

fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim().to_ascii_lowercase();
    let (num, mult) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 1u64 << 10),
        'm' => (&s[..s.len() - 1], 1u64 << 20),
        'g' => (&s[..s.len() - 1], 1u64 << 30),
        _ => (&s[..], 1u64),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// xorshift64*: enough to shuffle offsets; not the code under test.
fn next_rand(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn cpu_times() -> (f64, f64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we own and pass by pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: bare_pread PATH BLOCK SIZE [SEED]");
        return ExitCode::from(2);
    }
    let path = &args[1];
    let (Some(block), Some(size)) = (parse_size(&args[2]), parse_size(&args[3])) else {
        eprintln!("bare_pread: cannot parse BLOCK or SIZE");
        return ExitCode::from(2);
    };
    let seed = args.get(4).and_then(|s| s.parse::<u64>().ok()).unwrap_or(1) | 1;
    if block == 0 || size < block {
        eprintln!("bare_pread: need 0 < BLOCK <= SIZE");
        return ExitCode::from(2);
    }
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("bare_pread: open {path}: {e}");
            return ExitCode::from(1);
        }
    };

    // Every block once, in a shuffled order, all decided before timing.
    let n = size / block;
    let mut offsets: Vec<u64> = (0..n).map(|i| i * block).collect();
    let mut rng = seed;
    for i in (1..offsets.len()).rev() {
        let j = (next_rand(&mut rng) % (i as u64 + 1)) as usize;
        offsets.swap(i, j);
    }
    let mut buf = vec![0u8; block as usize];

    let (u0, s0) = cpu_times();
    let t0 = Instant::now();
    let mut bytes = 0u64;
    for &off in &offsets {
        match file.read_at(&mut buf, off) {
            Ok(k) if k as u64 == block => bytes += block,
            Ok(k) => {
                eprintln!("bare_pread: short read of {k} bytes at {off}");
                return ExitCode::from(1);
            }
            Err(e) => {
                eprintln!("bare_pread: read at {off}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let (u1, s1) = cpu_times();
    // Keep the buffer observable so the reads cannot be optimised away.
    std::hint::black_box(&buf);
    println!(
        "ops={n} bytes={bytes} elapsed_s={elapsed:.6} loop_user_s={:.6} loop_sys_s={:.6}",
        u1 - u0,
        s1 - s0
    );
    ExitCode::SUCCESS
}
