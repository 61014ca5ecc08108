//! The warnings a run can only decide after its phases: whether the page
//! cache served them and whether the workers took turns on the CPUs.
//!
//! Before the phases run, all ioscale knows is the working set against the
//! memory and the workers against the CPUs, and a warning drawn from that
//! alone ("likely page cache") is a guess: on a FUSE mount whose daemon
//! was traced returning every byte read, or with 16 workers that sleep
//! waiting for replies on 2 idle CPUs, it contradicts what ioscale
//! measured. So where the phases were measured (the resource probe of a
//! sweep: traced FUSE requests, device counters, CPU time and run-queue
//! wait; and every phase's own CPU time) the warning follows the
//! measurement, decided by [`probe::evidence`], the same functions the
//! analysis uses; the guess is kept only where nothing was measured.

use probe::evidence::{served, Below, Served, Way, CPUS_FULL};
use probe::Resources;
use report::PhaseRecord;
use spec::format_size;

use crate::phase::Measured;

/// What the warnings weigh the measurements against: one node's share.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Machine {
    /// Online CPUs of the node.
    pub(crate) cpus: u32,
    /// Its memory, bytes (0: unknown).
    pub(crate) mem_bytes: u64,
    /// Workers on the node.
    pub(crate) threads: u32,
    /// Nodes of the run: the probe measures rank 0's only.
    pub(crate) nodes: u32,
}

/// What the probed phases of one direction show, summed.
struct Seen {
    phase_bytes: u64,
    below: Below,
}

/// Sums, over the phases that moved bytes in `way` and were measured
/// below the cache, the phase's bytes and the bytes seen below it. `None`
/// when no such phase was measured (or the run spans several nodes: the
/// probe sees rank 0's node only).
fn seen(m: &Measured<'_>, machine: &Machine, way: Way) -> Option<Seen> {
    if machine.nodes > 1 {
        return None;
    }
    let mut out: Option<Seen> = None;
    for (p, r) in m.probed() {
        let bytes = match way {
            Way::Reads => p.read_bytes,
            Way::Writes => p.write_bytes,
        };
        if bytes == 0 {
            continue;
        }
        let Some(b) = r.below_cache(way) else {
            continue;
        };
        match out.as_mut() {
            Some(s) => {
                s.phase_bytes = s.phase_bytes.saturating_add(bytes);
                s.below.bytes += b.bytes;
                s.below.traffic += b.traffic;
            }
            None => {
                out = Some(Seen {
                    phase_bytes: bytes,
                    below: b,
                })
            }
        }
    }
    // A device that other work kept busier than the phase proves nothing.
    out.filter(|s| served(s.phase_bytes, &s.below) != Served::Unclear)
}

/// The measured sentence for one direction the cache served, or `None`
/// when the storage served it.
fn measured_cache(s: &Seen, way: Way, remedy: &str) -> Option<String> {
    let partly = match served(s.phase_bytes, &s.below) {
        Served::Storage | Served::Unclear => return None,
        Served::Cache => "",
        Served::Partly => "partly ",
    };
    let (what, verb) = match way {
        Way::Reads => (
            format!("the read phases were served {partly}from the page cache"),
            "read",
        ),
        Way::Writes => (
            format!("the write phases left their data {partly}in the page cache"),
            "wrote",
        ),
    };
    Some(format!(
        "{what}, not the storage: of the {} they {verb}, {}. {remedy}",
        format_size(s.phase_bytes),
        s.below.describe(way, |b| format_size(b as u64))
    ))
}

/// What a data run's page-cache warnings need to know of its spec.
pub(crate) struct CacheRisk {
    /// Bytes of the data set on this node.
    pub(crate) working_set: u64,
    /// Reads that the page cache may serve (buffered).
    pub(crate) reads: bool,
    /// Writes that may stay in it (buffered, not synced in the phase).
    pub(crate) writes: bool,
    /// A read follows a write of the same files without a cache drop.
    pub(crate) reads_after_write: bool,
    /// `--drop-caches` was given.
    pub(crate) drop_caches: bool,
}

/// The page-cache warnings of a data run: measured where the phases were
/// probed below the cache, else the guess from the working set against
/// the memory (and the read after a write).
pub(crate) fn cache_warnings(risk: &CacheRisk, machine: &Machine, m: &Measured<'_>) -> Vec<String> {
    let mut w = Vec::new();
    let drop = if risk.reads && !risk.drop_caches {
        ", or --drop-caches before reads"
    } else {
        ""
    };
    let reads = risk.reads.then(|| seen(m, machine, Way::Reads)).flatten();
    let writes = risk.writes.then(|| seen(m, machine, Way::Writes)).flatten();
    if let Some(s) = &writes {
        w.extend(measured_cache(
            s,
            Way::Writes,
            "Use --direct, or --sync end to time the flush",
        ));
    }
    if let Some(s) = &reads {
        w.extend(measured_cache(
            s,
            Way::Reads,
            &format!("Use --direct, or a working set larger than RAM{drop}"),
        ));
    }
    let guess_reads = risk.reads && reads.is_none();
    let guess_writes = risk.writes && writes.is_none();
    if (guess_reads || guess_writes)
        && machine.mem_bytes > 0
        && risk.working_set < machine.mem_bytes
    {
        w.insert(
            0,
            format!(
                "buffered I/O on {} of data, less than this machine's {} of RAM: the figures are \
                 likely page cache, not storage. Use --direct, or a working set larger than RAM{}",
                format_size(risk.working_set),
                format_size(machine.mem_bytes),
                if guess_reads { drop } else { "" }
            ),
        );
    }
    if guess_reads && risk.reads_after_write && !risk.drop_caches {
        w.push(
            "a read phase follows a write on the same files without --drop-caches: it reads what \
             the page cache kept, not the device"
                .into(),
        );
    }
    w
}

/// Where the reading phases named `after` (a read, stat or readdir that
/// follows the create in the same run) were served: each measured one by
/// its traced FUSE requests per file, or for data read by what was seen
/// below the cache. `None` when none was measured.
fn files_seen(after: &[&str], machine: &Machine, m: &Measured<'_>) -> Option<(Served, String)> {
    if machine.nodes > 1 {
        return None;
    }
    let mut worst: Option<(Served, String)> = None;
    for (p, r) in m.probed().filter(|(p, _)| after.contains(&p.op.as_str())) {
        let found = if p.read_bytes > 0 {
            r.below_cache(Way::Reads).map(|b| {
                (
                    served(p.read_bytes, &b),
                    format!(
                        "of the {} the {} phase read, {}",
                        format_size(p.read_bytes),
                        p.op,
                        b.describe(Way::Reads, |x| format_size(x as u64))
                    ),
                )
            })
        } else {
            r.files_served(p.ops).map(|(s, n)| {
                (
                    s,
                    format!(
                        "the FUSE daemon received {n} requests (traced) for the {} files of the {} phase",
                        p.ops, p.op
                    ),
                )
            })
        };
        let Some(f) = found.filter(|f| f.0 != Served::Unclear) else {
            continue;
        };
        if worst.as_ref().is_none_or(|w| w.0 == Served::Storage) {
            worst = Some(f);
        }
    }
    worst
}

/// The warning that reading phases after the create of the same run are
/// served from the kernel's caches: measured where their requests were
/// traced (or their data seen below the cache), else said as the rule it
/// is; nothing when the measurements show the storage served them.
pub(crate) fn meta_cache_warning(
    after: &[&str],
    machine: &Machine,
    m: &Measured<'_>,
) -> Option<String> {
    if after.is_empty() {
        return None;
    }
    match files_seen(after, machine, m) {
        Some((Served::Storage, _)) => None,
        Some((s, how)) => {
            Some(format!(
            "a read, stat or readdir phase follows the create in the same run and was served {} \
             the page and inode caches, not the storage: {how}",
            if s == Served::Partly { "partly from" } else { "from" }
        ))
        }
        None => Some(
            "a read, stat or readdir phase follows the create in the same run: it is served from \
             the page and inode caches, not the storage"
                .into(),
        ),
    }
}

/// How many CPUs ioscale's threads wanted in phase `p`: from its probe
/// (CPU time, the FUSE daemon's, and the run-queue wait, where the window
/// resolves them), else its own CPU time ÷ elapsed; and how it was read.
fn wanted(p: &PhaseRecord, r: Option<&Resources>) -> Option<(f64, &'static str)> {
    if let Some(r) = r.map(Resources::resolvable) {
        let how = if r.self_cpu_wait.is_some() {
            "running or waiting for a CPU"
        } else {
            "running"
        };
        return Some((r.cpus_wanted(), how));
    }
    (p.elapsed_s > 0.0).then(|| ((p.cpu_user_s + p.cpu_sys_s) / p.elapsed_s, "running"))
}

/// "16 workers on 2 CPUs took turns …" when many more workers than CPUs
/// ran and a phase's CPU figures show the CPUs full; nothing when the
/// workers slept (waiting for replies) and left the CPUs free. `who` is
/// the word for a worker ("workers", "threads").
pub(crate) fn turns_warning(who: &str, machine: &Machine, m: &Measured<'_>) -> Option<String> {
    let cpus = machine.cpus.max(1);
    if machine.threads <= cpus * 4 {
        return None;
    }
    let (p, (cores, how)) = m
        .with_probes()
        .filter_map(|(p, r)| Some((p, wanted(p, r)?)))
        .max_by(|a, b| a.1 .0.total_cmp(&b.1 .0))?;
    (cores >= CPUS_FULL * cpus as f64).then(|| {
        format!(
            "{} {who} on {cpus} CPUs took turns: in the {} phase ioscale's threads were {how} \
             {cores:.2} at a time on average; the aggregate rate (first start to last finish) is \
             the honest figure",
            machine.threads, p.op
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe::{FuseRequests, FuseUse, OpRequests, PhaseProbe};

    fn phase(op: &str, read: u64, write: u64) -> PhaseRecord {
        PhaseRecord {
            op: op.into(),
            read_bytes: read,
            write_bytes: write,
            bytes: read + write,
            elapsed_s: 1.0,
            ..Default::default()
        }
    }

    fn traced(op: &str, read: u64, write: u64) -> PhaseProbe {
        PhaseProbe {
            op: op.into(),
            rep: 0,
            resources: Resources {
                elapsed_s: 1.0,
                cpus: 2,
                fuse: Some(FuseUse {
                    requests: Some(FuseRequests {
                        read: OpRequests {
                            bytes: read,
                            count: 1,
                            ..Default::default()
                        },
                        write: OpRequests {
                            bytes: write,
                            count: 1,
                            ..Default::default()
                        },
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
        }
    }

    const RISK: CacheRisk = CacheRisk {
        working_set: 4 << 20,
        reads: true,
        writes: true,
        reads_after_write: true,
        drop_caches: false,
    };

    fn machine() -> Machine {
        Machine {
            cpus: 2,
            mem_bytes: 24 << 30,
            threads: 16,
            nodes: 1,
        }
    }

    #[test]
    fn a_daemon_that_served_every_byte_leaves_no_page_cache_warning() {
        let phases = [phase("write", 0, 4 << 20), phase("read", 4 << 20, 0)];
        let probes = [traced("write", 0, 4 << 20), traced("read", 4 << 20, 0)];
        let m = Measured::new(&phases, &probes);
        let w = cache_warnings(&RISK, &machine(), &m);
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn reads_the_daemon_never_saw_are_named_with_the_figures() {
        let phases = [phase("write", 0, 4 << 20), phase("read", 4 << 20, 0)];
        let probes = [traced("write", 0, 4 << 20), traced("read", 0, 0)];
        let w = cache_warnings(&RISK, &machine(), &Measured::new(&phases, &probes));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("the read phases were served from the page cache")
                && w[0].contains("of the 4 MiB they read, the FUSE daemon returned 0 B"),
            "{}",
            w[0]
        );
        assert!(!w[0].contains("likely"), "{}", w[0]);
    }

    #[test]
    fn without_measurements_the_guess_stays() {
        let phases = [phase("write", 0, 4 << 20), phase("read", 4 << 20, 0)];
        let w = cache_warnings(&RISK, &machine(), &Measured::new(&phases, &[]));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("likely page cache") && w[0].contains("--drop-caches"));
        assert!(w[1].contains("reads what the page cache kept"));
        // Several nodes: rank 0's probe is not the run's.
        let probes = [traced("write", 0, 4 << 20), traced("read", 4 << 20, 0)];
        let mut two = machine();
        two.nodes = 2;
        let w = cache_warnings(&RISK, &two, &Measured::new(&phases, &probes));
        assert_eq!(w.len(), 2, "{w:?}");
    }

    #[test]
    fn a_stat_the_daemon_answered_is_not_called_cached() {
        let mut stat = phase("stat", 0, 0);
        stat.ops = 64;
        let mut served_all = traced("stat", 0, 0);
        let q = served_all
            .resources
            .fuse
            .as_mut()
            .unwrap()
            .requests
            .as_mut()
            .unwrap();
        q.read.count = 0;
        q.write.count = 0;
        q.other.insert("FUSE_GETATTR".into(), 64);
        let phases = [stat.clone()];
        assert_eq!(
            meta_cache_warning(
                &["stat"],
                &machine(),
                &Measured::new(&phases, &[served_all])
            ),
            None
        );
        let mut none = traced("stat", 0, 0);
        let q = none
            .resources
            .fuse
            .as_mut()
            .unwrap()
            .requests
            .as_mut()
            .unwrap();
        q.read.count = 0;
        q.write.count = 0;
        let w =
            meta_cache_warning(&["stat"], &machine(), &Measured::new(&phases, &[none])).unwrap();
        assert!(
            w.contains("was served from the page and inode caches")
                && w.contains("the FUSE daemon received 0 requests (traced) for the 64 files of the stat phase"),
            "{w}"
        );
        let w = meta_cache_warning(&["stat"], &machine(), &Measured::new(&phases, &[])).unwrap();
        assert!(
            w.ends_with("it is served from the page and inode caches, not the storage"),
            "{w}"
        );
        assert_eq!(
            meta_cache_warning(&[], &machine(), &Measured::new(&phases, &[])),
            None
        );
    }

    #[test]
    fn workers_take_turns_only_when_the_cpus_were_full() {
        let mut idle = phase("read", 1 << 20, 0);
        idle.cpu_user_s = 0.05;
        let m = [idle.clone()];
        assert_eq!(
            turns_warning("workers", &machine(), &Measured::new(&m, &[])),
            None
        );
        let mut busy = idle;
        busy.cpu_sys_s = 1.9;
        let m = [busy];
        let w = turns_warning("workers", &machine(), &Measured::new(&m, &[])).unwrap();
        assert!(
            w.starts_with("16 workers on 2 CPUs took turns: in the read phase ioscale's threads were running 1.95 at a time"),
            "{w}"
        );
        assert!(!w.contains("stonewall"), "{w}");
        // The probe's wait counts: threads kept off the CPUs by others.
        let phases = [phase("read", 1 << 20, 0)];
        let mut p = traced("read", 1 << 20, 0);
        p.resources.self_cores = 0.2;
        p.resources.self_cpu_wait = Some(1.7);
        let w = turns_warning("workers", &machine(), &Measured::new(&phases, &[p])).unwrap();
        assert!(w.contains("running or waiting for a CPU 1.90"), "{w}");
        // Four workers per CPU or fewer: no warning at all.
        let few = Machine {
            threads: 8,
            ..machine()
        };
        assert_eq!(
            turns_warning("workers", &few, &Measured::new(&m, &[])),
            None
        );
    }
}
