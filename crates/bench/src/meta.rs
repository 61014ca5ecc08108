//! The driver of `ioscale meta`: the tree, its marker, the phases, and
//! removing exactly what was made.
//!
//! ioscale works in `TARGET/ioscale-meta.d` and writes a marker there
//! before anything else. The marker records the tree's shape (threads,
//! files, hashing, prefix) and which kinds of entries may exist, so a later
//! run can use a kept tree, and so cleanup can recompute every name instead
//! of listing and deleting whatever it finds: only names of ioscale's
//! scheme are unlinked, directories are removed with `rmdir` only, and
//! anything a user put there survives. Results reduce into the same
//! [`ResultSet`] as `ioscale run`, with `op` the metadata operation and
//! `ops` the files processed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use coord::Coordinator;
use engine::meta::{run_meta_worker_with, MetaPlan, MetaSample};
use engine::registry::{check_meta_spec, MetaEngineConfig};
use report::{
    FilesRecord, HostInfo, JobSpec, PhaseRecord, ResultSet, Stonewall, ThreadFiles, WorkerRecord,
};
use spec::{MetaOp, MetaSpec};
use stats::LatencyHistogram;

use crate::cluster::{self, Layout, PhaseOut};
use crate::dataset::tree::{close, prepare, union, Tree};
use crate::error::Error;
use crate::host;
use crate::record::{failure_record, new_record, other_rank_failed, record_phase};
use crate::run::{make_run_id, space_warning, Options, Outcome};
use crate::topology::Topology;
use probe::{PhaseProbe, Probe};

pub use crate::dataset::tree::{MARKER_NAME, ROOT_NAME};

/// Checks the target before anything is created.
fn preflight(spec: &MetaSpec) -> Result<(), Error> {
    check_meta_spec(&spec.engine, spec.iodepth, spec).map_err(|e| Error::Usage(e.to_string()))?;
    let t = &spec.target;
    crate::run::check_target(t)?;
    if spec.direct && spec.ops.iter().any(|o| o.moves_data()) {
        crate::dataset::probe_direct(t, spec.record_size)?;
    }
    Ok(())
}

fn warnings(spec: &MetaSpec, host: &HostInfo) -> Vec<String> {
    let mut w = Vec::new();
    if matches!(host.fs_type.as_str(), "tmpfs" | "ramfs") {
        w.push(format!(
            "the target is on {}: memory, not storage",
            host.fs_type
        ));
    }
    if spec.threads > host.cpus.max(1) * 4 {
        w.push(format!(
            "{} threads on {} CPUs: threads take turns; the aggregate rate (first start to last \
             finish) is the honest figure, the stonewall figure shows the files done by the time \
             the first thread finished",
            spec.threads, host.cpus
        ));
    }
    let reads_after_write = spec.ops.iter().enumerate().any(|(i, o)| {
        matches!(o, MetaOp::Read | MetaOp::Stat | MetaOp::Readdir)
            && spec.ops[..i].iter().any(|p| p.writes_data())
    });
    if reads_after_write && !spec.direct {
        w.push(
            "a read, stat or readdir phase follows the create in the same run: it is served from \
             the page and inode caches, not the storage"
                .into(),
        );
    }
    w
}

/// Runs the whole metadata workload as one rank of `coord`: `spec.threads`
/// threads here, `coord.size() × spec.threads` workers in all, worker
/// `rank × threads + t` being thread `t` of rank `rank` (names, hashed
/// directories and the marker use the global index, so a tree made by 4
/// ranks of 2 threads is the tree of `--threads 8`). Every rank calls it
/// with the same spec.
///
/// Rank 0 alone makes (or finds) the working directory and the marker
/// before any other rank starts, writes the marker between phases, and
/// removes the tree after every rank finished; it receives every worker's
/// sample. Failures, interrupts and time limits are agreed at every phase
/// boundary, so all ranks stop at the same point. The other ranks'
/// [`Outcome`] is not meant to be printed.
pub fn run_with(
    spec: &MetaSpec,
    command: Vec<String>,
    stop: Arc<AtomicBool>,
    coord: &dyn Coordinator,
) -> Result<Outcome, Error> {
    run_with_options(spec, command, stop, coord, Options::default())
}

/// [`run_with`] with [`Options`]: resource probes around every timed
/// phase, and repetitions that go on after a failed one.
pub fn run_with_options(
    spec: &MetaSpec,
    command: Vec<String>,
    stop: Arc<AtomicBool>,
    coord: &dyn Coordinator,
    opts: Options,
) -> Result<Outcome, Error> {
    run_with_hook(spec, command, stop, coord, opts, &mut |_| {})
}

/// [`run_with_options`], calling `before_cleanup` on rank 0 with the
/// record of an interrupted run before the tree is removed: the caller
/// saves it there, so a second signal during a long cleanup loses nothing
/// but the cleanup.
pub fn run_with_hook(
    spec: &MetaSpec,
    command: Vec<String>,
    stop: Arc<AtomicBool>,
    coord: &dyn Coordinator,
    opts: Options,
    before_cleanup: &mut dyn FnMut(&ResultSet),
) -> Result<Outcome, Error> {
    let mut notes = Vec::new();
    let Setup {
        host,
        topo,
        gspec,
        mut warns,
        mut tree,
    } = setup(spec, coord, &mut notes)?;
    let is_root = topo.is_root();
    let layout = &topo.layout;
    let user_spec = spec;
    let spec = &gspec;
    let mut seq = 0u64;
    let mut results = new_record(command, host, JobSpec::Meta(user_spec.clone()));
    // Indices per thread that the next phase may use: a time-limited
    // create leaves only a prefix of the files.
    let mut limit: Vec<u64> = vec![spec.files; spec.threads as usize];
    let mut state = tree.marker.state;
    let mut extent = tree.marker.extent;
    let mut ran_cleanup = false;
    let mut probes = Vec::new();
    'reps: for rep in opts.first_rep..opts.first_rep.saturating_add(spec.reps) {
        for &op in &spec.ops {
            if coord.any(stop.load(Ordering::Relaxed)) {
                results.interrupted = true;
                break 'reps;
            }
            if let Some(pre) = state.prerequisite(op) {
                // Lay out what the phase works on, untimed, as `run` lays
                // out data before a read.
                tree.marker.state = union(state, spec.state_after(state, pre).unwrap_or(state));
                tree.marker.extent = spec.files.max(extent);
                tree.save();
                let plan = MetaPlan {
                    spec,
                    op: pre,
                    root: tree.root.clone(),
                    rep,
                    state,
                    limit: Some(limit.clone()),
                    timed: false,
                    root_fd: tree.root_fd(),
                };
                let out = run_phase_all(&plan, &stop, coord, &topo, &mut seq)?;
                let samples = &out.samples;
                extent = extent.max(samples.iter().map(|s| s.touched).max().unwrap_or(0));
                if out.failed {
                    state = tree.marker.state;
                    match samples
                        .iter()
                        .find_map(|s| s.failure.as_ref().map(|f| (s.worker, f)))
                    {
                        Some((w, f)) => {
                            results
                                .errors
                                .push(failure_record(w, format!("layout {}", f.op), f))
                        }
                        None => results.errors.push(other_rank_failed(&topo)),
                    }
                    break 'reps;
                }
                if out.interrupted {
                    state = tree.marker.state;
                    results.interrupted = true;
                    break 'reps;
                }
                state = spec.state_after(state, pre).unwrap_or(state);
                warns.push(format!(
                    "the entries were laid out by an untimed {pre} before the first {op} phase"
                ));
            }
            let after = match spec.state_after(state, op) {
                Ok(a) => a,
                Err(why) => {
                    // Validation and `prepare` rule this out; be safe anyway.
                    warns.push(format!("skipped {op}: {why}"));
                    continue;
                }
            };
            if op == MetaOp::Cleanup {
                ran_cleanup = true;
            }
            let creates = matches!(op, MetaOp::Create | MetaOp::Mkdir | MetaOp::Symlink);
            // Pessimistic marker first: a crash mid-phase must not leave
            // entries the marker does not mention.
            tree.marker.state = union(state, after);
            if creates {
                tree.marker.extent = spec.files.max(extent);
            }
            tree.save();
            let plan = MetaPlan {
                spec,
                op,
                root: tree.root.clone(),
                rep,
                state,
                limit: Some(limit.clone()),
                timed: true,
                root_fd: tree.root_fd(),
            };
            let pr = (opts.probe && is_root).then(|| Probe::start(&user_spec.target));
            let out = run_phase_all(&plan, &stop, coord, &topo, &mut seq)?;
            if let Some(pr) = pr {
                probes.push(PhaseProbe {
                    op: op.name().into(),
                    rep,
                    resources: pr.finish(),
                });
            }
            let samples = &out.samples;
            if creates {
                extent = extent.max(samples.iter().map(|s| s.touched).max().unwrap_or(0));
            }
            let interrupted = out.interrupted;
            let failed = out.failed;
            let cut_short = out.deadline;
            let rec = is_root.then(|| reduce(&plan, &out, layout));
            record_phase(&mut results, rec, &out, layout, |s| s.failure.as_ref());
            left_notes(samples, &mut notes);
            if failed && results.errors.is_empty() {
                results.errors.push(other_rank_failed(&topo));
            }
            if failed || interrupted {
                state = union(state, after);
                if interrupted {
                    results.interrupted = true;
                } else if opts.keep_going {
                    // The marker covers what the failed phase may have
                    // left; the next repetition starts from there.
                    tree.marker.state = state;
                    tree.marker.extent = extent;
                    tree.save();
                    continue 'reps;
                }
                break 'reps;
            }
            if cut_short {
                if creates {
                    // The files made form a prefix per thread; later
                    // phases work on those.
                    for s in samples {
                        limit[s.worker as usize] = limit[s.worker as usize].min(s.files);
                    }
                    state = after;
                } else if matches!(
                    op,
                    MetaOp::Delete | MetaOp::Rename | MetaOp::Rmdir | MetaOp::Cleanup
                ) {
                    state = union(state, after);
                    warns.push(format!(
                        "the sequence stopped after the cut-short {op} (--time or --stop-at-first): later \
                         phases would find a partly changed tree"
                    ));
                    break 'reps;
                }
            } else {
                state = after;
            }
            tree.marker.state = state;
            tree.marker.extent = extent;
            tree.save();
        }
    }
    results.warnings = warns;
    results.summarise();

    // Every rank has closed its entries before rank 0 removes them.
    coord.barrier();
    if is_root {
        if results.interrupted {
            before_cleanup(&results);
        }
        tree.marker.state = state;
        tree.marker.extent = extent;
        close(spec, &mut tree, ran_cleanup, &mut notes);
    }
    Ok(Outcome {
        results,
        notes,
        probes,
        latency: Vec::new(),
    })
}

/// Notes on the directories a cleanup had to leave (they held entries
/// ioscale did not create).
fn left_notes(samples: &[MetaSample], notes: &mut Vec<String>) {
    for s in samples {
        if let Some(p) = &s.first_left {
            notes.push(format!(
                "cleanup: {} and {} more directories were not empty (they hold entries \
                 ioscale did not create; left alone)",
                p.display(),
                s.left.saturating_sub(1)
            ));
        }
    }
}

/// What a metadata run has before its first phase.
struct Setup {
    host: HostInfo,
    topo: Topology,
    /// The spec of all workers: names, the marker and cleanup use it.
    gspec: MetaSpec,
    warns: Vec<String>,
    tree: Tree,
}

/// The checks, warnings and tree before the first phase: collective calls
/// every rank makes in the same order. `spec` is the user's (threads per
/// rank); notes of the tree's preparation go to `notes`.
fn setup(
    spec: &MetaSpec,
    coord: &dyn Coordinator,
    notes: &mut Vec<String>,
) -> Result<Setup, Error> {
    let mut host = host::collect(&spec.target);
    let topo = Topology::discover(coord, spec.threads, &mut host)?;
    let mut gspec = spec.clone();
    gspec.threads = topo.workers;
    cluster::agree(coord, preflight(&gspec))?;
    // CPUs are per node: warn about one node's share.
    let mut node_spec = spec.clone();
    node_spec.threads = topo.threads_per_node();
    let mut warns = warnings(&node_spec, &host);
    if gspec.ops.contains(&MetaOp::Create) {
        warns.extend(space_warning(
            &gspec.target,
            gspec.file_size.max() * gspec.total_files(),
        ));
    }
    let run_id = coord
        .broadcast_as(&make_run_id())
        .map_err(|e| Error::Refused(e.to_string()))?;
    // Rank 0 makes the tree; the others learn its marker only after that
    // (the broadcast), so nobody creates an entry before. Their copy never
    // writes the marker.
    let made = topo.is_root().then(|| prepare(&gspec, &run_id, notes));
    let made = cluster::agree(coord, made.transpose())?;
    let tree = crate::dataset::tree::share(coord, made, &gspec)?;
    Ok(Setup {
        host,
        topo,
        gspec,
        warns,
        tree,
    })
}

/// Runs one phase on this rank, one thread per worker, all released
/// together after the ranks' barrier, and agrees on its outcome with the
/// other ranks (see [`cluster::run_phase_all`]).
fn run_phase_all(
    plan: &MetaPlan<'_>,
    stop: &Arc<AtomicBool>,
    coord: &dyn Coordinator,
    topo: &Topology,
    seq: &mut u64,
) -> Result<PhaseOut<MetaSample>, Error> {
    let threads = topo.threads_per_rank as usize;
    engine::live::begin(engine::live::PhaseInfo {
        op: plan.op.to_string(),
        rep: plan.rep,
        moves_data: false,
        expected: topo.my_workers().map(|w| plan.count_for(w)).sum(),
        time_limit: plan.spec.time_limit,
    });
    // The engine was checked in preflight; the untimed layout and teardown
    // phases run synchronously whatever it is.
    let cfg = MetaEngineConfig {
        engine: engine::registry::meta_engine(&plan.spec.engine)
            .map(|e| e.info().name)
            .unwrap_or("sync"),
        iodepth: plan.spec.iodepth,
    };
    let out = cluster::run_phase_all(
        coord,
        seq,
        stop,
        "m",
        vec![(); threads],
        |w, (), ctl, barrier| run_meta_worker_with(w, plan, &cfg, ctl, barrier),
    );
    engine::live::end();
    out
}

const MIB: f64 = 1024.0 * 1024.0;

/// Reduces thread samples into one phase record: totals ÷ (last finish −
/// first start), never a sum of per-thread rates.
fn reduce(plan: &MetaPlan<'_>, out: &PhaseOut<MetaSample>, layout: &Layout) -> PhaseRecord {
    let (samples, first_done_ns, cpu, interrupted) = (
        &out.samples[..],
        out.first_done_ns,
        out.cpu,
        out.interrupted,
    );
    let t0 = samples.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let t1 = samples.iter().map(|s| s.end_ns).max().unwrap_or(0);
    let elapsed = t1.saturating_sub(t0) as f64 / 1e9;
    let mut hist = LatencyHistogram::new();
    for s in samples {
        hist += &s.hist;
    }
    let files: u64 = samples.iter().map(|s| s.files).sum();
    let read_bytes: u64 = samples.iter().map(|s| s.read_bytes).sum();
    let write_bytes: u64 = samples.iter().map(|s| s.write_bytes).sum();
    let bytes = read_bytes + write_bytes;
    let records: u64 = samples.iter().map(|s| s.records).sum();
    let rate = |x: f64| if elapsed > 0.0 { x / elapsed } else { 0.0 };
    let sw_s = match first_done_ns {
        Some(ns) => ns.saturating_sub(t0) as f64 / 1e9,
        None => elapsed,
    };
    let sw_files: u64 = samples.iter().map(|s| s.stonewall_files).sum();
    let sw_bytes: u64 = samples.iter().map(|s| s.stonewall_bytes).sum();
    let requested: u64 = (0..plan.spec.threads).map(|w| plan.count_for(w)).sum();
    let any_failed = samples.iter().any(|s| s.failure.is_some());
    PhaseRecord {
        op: plan.op.name().into(),
        rep: plan.rep,
        threads: plan.spec.threads,
        bytes,
        ops: files,
        read_bytes,
        write_bytes,
        elapsed_s: elapsed,
        bw_mib_s: rate(bytes as f64) / MIB,
        bw_mb_s: rate(bytes as f64) / 1e6,
        iops: rate(files as f64),
        lat_us: hist.summary(),
        open_s: 0.0,
        io_s: samples
            .iter()
            .map(|s| s.end_ns.saturating_sub(s.start_ns))
            .max()
            .unwrap_or(0) as f64
            / 1e9,
        close_s: 0.0,
        // mdtest -Y: the closing syncfs, inside the phase's time.
        fsync_s: samples.iter().map(|s| s.sync_ns).max().unwrap_or(0) as f64 / 1e9,
        cpu_user_s: cpu.0,
        cpu_sys_s: cpu.1,
        stonewall: Stonewall {
            s: sw_s,
            bytes: sw_bytes,
            bw_mib_s: if sw_s > 0.0 {
                sw_bytes as f64 / sw_s / MIB
            } else {
                0.0
            },
        },
        time_limited: samples.iter().any(|s| s.hit_deadline),
        interrupted,
        errors: samples.iter().map(|s| s.errors).sum(),
        start_skew_s: out.start_skew_s(),
        worker_start_spread_s: out.worker_start_spread_s(),
        verify: (plan.op == MetaOp::Read && plan.spec.verify).then(|| report::VerifyRecord {
            checked_bytes: samples.iter().map(|s| s.checked_bytes).sum(),
            bad_bytes: samples.iter().map(|s| s.bad_bytes).sum(),
            mismatches: samples
                .iter()
                .flat_map(|s| &s.mismatches)
                .map(|(f, o, b)| report::Mismatch {
                    file: f.display().to_string(),
                    offset: *o,
                    bad_bytes: *b,
                })
                .collect(),
        }),
        files: Some(FilesRecord {
            requested,
            processed: files,
            processed_pct: if requested > 0 {
                files as f64 * 100.0 / requested as f64
            } else {
                100.0
            },
            stonewall_files: sw_files,
            stonewall_files_s: if sw_s > 0.0 {
                sw_files as f64 / sw_s
            } else {
                0.0
            },
            records,
            peak_rss_bytes: engine::sys::peak_rss_bytes(),
            threads: samples
                .iter()
                .map(|s| ThreadFiles {
                    thread: s.worker,
                    files: s.files,
                    records: s.records,
                    elapsed_s: s.end_ns.saturating_sub(s.start_ns) as f64 / 1e9,
                    status: if s.failure.is_some() {
                        "error"
                    } else if s.hit_deadline {
                        "time-limit"
                    } else if interrupted && s.files < plan.count_for(s.worker) {
                        "interrupted"
                    } else if any_failed && s.files < plan.count_for(s.worker) {
                        "stopped"
                    } else {
                        "ok"
                    }
                    .into(),
                })
                .collect(),
        }),
        workers: samples
            .iter()
            .map(|s| {
                let own = s.end_ns.saturating_sub(s.start_ns) as f64 / 1e9;
                WorkerRecord {
                    worker: s.worker,
                    host: layout.host_of(s.worker).to_string(),
                    bytes: s.bytes(),
                    ops: s.files,
                    start_s: s.start_ns.saturating_sub(t0) as f64 / 1e9,
                    end_s: s.end_ns.saturating_sub(t0) as f64 / 1e9,
                    open_s: 0.0,
                    io_s: own,
                    close_s: 0.0,
                    bw_mib_s: if own > 0.0 {
                        s.bytes() as f64 / own / MIB
                    } else {
                        0.0
                    },
                }
            })
            .collect(),
    }
}
