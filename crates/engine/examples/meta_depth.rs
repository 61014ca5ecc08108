//! Metadata rate by engine, threads and depth, for `scripts/bench-uring`
//! while the `ioscale meta` command line cannot choose the engine yet.
//!
//! `meta_depth DIR ENGINE THREADS DEPTH FILES [SIZE [LAYOUT]]` creates
//! FILES files of SIZE bytes (default 0) per thread in a fresh tree under
//! DIR (LAYOUT: `dirs` = one directory per thread, the default; `same` =
//! every thread in one directory; a number N = N files per directory), stats
//! them and deletes them, and prints one JSON line per phase: files/s
//! (files ÷ (last end − first start)) and the process CPU seconds the phase
//! took (user + system, io-wq workers included: they are threads of this
//! process).

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use engine::registry::{check_meta, MetaEngineConfig};
use spec::{MetaOp, TreeState};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 6 {
        eprintln!("usage: meta_depth DIR ENGINE THREADS DEPTH FILES [SIZE]");
        std::process::exit(2);
    }
    let dir = std::path::PathBuf::from(&a[1]);
    let threads: u64 = a[3].parse().expect("THREADS");
    let depth: u32 = a[4].parse().expect("DEPTH");
    let files: u64 = a[5].parse().expect("FILES");
    let size: u64 = a.get(6).map(|s| s.parse().expect("SIZE")).unwrap_or(0);
    let ops = [MetaOp::Create, MetaOp::Stat, MetaOp::Delete];
    let engine = match check_meta(&a[2], depth, &ops) {
        Ok(e) => e.info().name,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let cfg = MetaEngineConfig {
        engine,
        iodepth: depth,
    };
    let scratch = common::Scratch::new(&dir, "meta-depth");
    let mut raw = common::meta_raw(&scratch.0, threads, files, size, &ops);
    match a.get(7).map(String::as_str) {
        None | Some("dirs") => {}
        Some("same") => raw.same_dir = true,
        Some(n) => raw.files_per_dir = Some(n.parse().expect("LAYOUT")),
    }
    let spec = raw.build().expect("valid spec");
    let root = common::make_root(&spec);
    let mut state = TreeState::default();
    for op in ops {
        let c0 = engine::sys::cpu_times();
        let (samples, secs) = common::run_phase(
            &spec,
            &root,
            op,
            state,
            cfg,
            Arc::new(AtomicBool::new(false)),
        );
        let c1 = engine::sys::cpu_times();
        let done: u64 = samples.iter().map(|s| s.files).sum();
        let errors: u64 = samples.iter().map(|s| s.errors).sum();
        if let Some(f) = samples.iter().find_map(|s| s.failure.as_ref()) {
            eprintln!("{op:?}: {f}");
        }
        let cpu = (c1.0 - c0.0) + (c1.1 - c0.1);
        println!(
            "{{\"op\":\"{}\",\"engine\":\"{engine}\",\"threads\":{threads},\"depth\":{depth},\"files\":{done},\"errors\":{errors},\"secs\":{secs:.6},\"files_per_s\":{:.1},\"cpu_s\":{cpu:.6},\"files_per_cpu_s\":{:.1}}}",
            op.name(),
            done as f64 / secs.max(1e-9),
            done as f64 / cpu.max(1e-9),
        );
        state = state.after(op).expect("phase order");
    }
}
