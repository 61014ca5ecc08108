//! O_DIRECT 4 KiB random reads through the io_uring engine with chosen
//! ring options, for `scripts/bench-uring` while the `ioscale run` command
//! line cannot set them yet.
//!
//! `uring_read FILE SIZE DEPTH SECS OPTS [ENGINE [buffered]]` reads FILE
//! (SIZE bytes, e.g. 1073741824) in a seeded shuffled order for at most
//! SECS seconds (ENGINE `io_uring`, the default, or `sync`; `buffered`
//! drops O_DIRECT, for page-cached reads) and
//! prints one JSON line: requests, seconds, IOPS, in-phase CPU seconds and
//! notes. OPTS is `+`-joined from `plain` (no option), `fixedbufs`,
//! `files`, `batch`, `coop`, `single`, `sqpoll`; `tuned` = fixedbufs +
//! files + coop + single.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use engine::registry::EngineOptions;
use engine::uring::{SubmitMode, UringOptions};
use engine::{run_worker, PhaseControl, PhasePlan, Prepared};
use spec::Op;

fn parse_opts(s: &str) -> UringOptions {
    let mut o = UringOptions::default();
    for p in s.split('+') {
        match p {
            "plain" => {}
            "tuned" => o = UringOptions::tuned(),
            "fixedbufs" => o.fixed_buffers = true,
            "files" => o.register_files = true,
            "batch" => o.submit = SubmitMode::Batch,
            "coop" => o.coop_taskrun = true,
            "single" => o.single_issuer = true,
            "sqpoll" => o.sqpoll_idle_ms = Some(100),
            _ => {
                eprintln!("uring_read: unknown option {p}");
                std::process::exit(2);
            }
        }
    }
    o
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if !(6..=8).contains(&a.len()) {
        eprintln!("usage: uring_read FILE SIZE DEPTH SECS OPTS [ENGINE [buffered]]");
        std::process::exit(2);
    }
    let size: u64 = a[2].parse().expect("SIZE in bytes");
    let depth: u32 = a[3].parse().expect("DEPTH");
    let secs: f64 = a[4].parse().expect("SECS");
    let opts = EngineOptions {
        uring: parse_opts(&a[5]),
    };
    let file: std::path::PathBuf = a[1].clone().into();
    let spec = spec::RawWorkload {
        target: file.parent().map(std::path::PathBuf::from),
        ops: vec![Op::Randread],
        xfer: Some(4096),
        size: Some(size),
        direct: a.get(7).map(String::as_str) != Some("buffered"),
        engine: Some(match a.get(6).map(String::as_str) {
            None => "io_uring".into(),
            Some(e) => match engine::registry::data_engine(e) {
                Ok(e) => e.info().name.into(),
                Err(e) => {
                    eprintln!("uring_read: {e}");
                    std::process::exit(2);
                }
            },
        }),
        iodepth: Some(depth.into()),
        seed: Some(3000),
        time_limit: Some(Duration::from_secs_f64(secs)),
        ..Default::default()
    }
    .build()
    .unwrap_or_else(|e| {
        eprintln!("uring_read: {e}");
        std::process::exit(2)
    });
    let plan: PhasePlan = PhasePlan::new(Arc::new(spec), 1, Op::Randread, vec![file]);
    let prep = Prepared::with_options(&plan, 0, &opts).expect("ring set-up");
    let notes = prep.notes().join("; ");
    let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
    let c0 = engine::sys::cpu_times();
    let (s, _) = run_worker(0, &plan, &ctl, &Barrier::new(1), prep);
    let c1 = engine::sys::cpu_times();
    if let Some(f) = &s.failure {
        eprintln!("uring_read: {f}");
        std::process::exit(1);
    }
    let t = (s.io_done_ns - s.open_done_ns) as f64 / 1e9;
    let cpu = (c1.0 - c0.0) + (c1.1 - c0.1);
    println!(
        "{{\"ops\":{},\"secs\":{t:.6},\"iops\":{:.1},\"cpu_s\":{cpu:.6},\"us_cpu_per_op\":{:.3},\"notes\":\"{notes}\"}}",
        s.counters.ops,
        s.counters.ops as f64 / t,
        cpu * 1e6 / s.counters.ops.max(1) as f64
    );
}
