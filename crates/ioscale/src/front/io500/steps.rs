//! io500's phases as steps of ioscale's executor: each phase translated
//! into the workload io500 hands IOR, mdtest or pfind, as a
//! [`spec::WorkloadSpec`], [`spec::MetaSpec`] or [`spec::FindSpec`] with
//! io500's file names, and what the write phases leave for the phases
//! after them ([`Carried`]: each task's item count, io500's stonewall
//! files).
//!
//! Names (D = the data directory, W = tasks, w = a task), as io500's
//! calls name them:
//! - ior-easy: `D/ior-easy/ior_file_easy.%08d` (IOR `-F`; with `uniqueDir`,
//!   `D/ior-easy/w/ior_file_easy.%08d`; without `filePerProc`, the shared
//!   file `D/ior-easy/ior_file_easy`);
//! - ior-hard: `D/ior-hard/file`, 47,008-byte blocks interleaved by task;
//! - ior-rnd4K / ior-rnd1MB: `D/ior-rnd4K/file`, `D/ior-rnd1MB/file`;
//! - mdtest-easy: `D/mdtest-easy/test-dir.0-0/mdtest_tree.w.0/file.mdtest.w.i`;
//! - mdtest-hard: `D/mdtest-hard/test-dir.0-0/mdtest_tree.0/file.mdtest.w.i`.
//!
//! Beside them the executor keeps its markers (`.ior_file_easy.ioscale-marker`,
//! `test-dir.0-0/.ioscale-meta-marker`, `D/.ioscale-scaffold`), so that
//! what a stopped run leaves is recognised by `ioscale clean D`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use spec::{
    FileNaming, FileSize, FindSpec, Layout, MetaNaming, MetaOp, MetaSpec, Op, RawFind, RawMeta,
    RawWorkload, SyncMode, WorkloadSpec,
};

use super::config::Config;
use super::phases::{FindScope, Kind, Phase, Step as Act};

/// ior-hard's fixed transfer and block size.
pub const HARD_XFER: u64 = 47_008;
/// mdtest-hard's fixed file size (written with -w, read with -e).
pub const MD_HARD_BYTES: u64 = 3_901;
/// The data-pattern seed of every phase.
pub const SEED: u64 = 0x10_500;
/// The segments io500 gives IOR's random phases (`-s 10000000`).
const RND_SEGMENTS: u64 = 10_000_000;

/// What one phase runs on the executor.
pub(super) enum Step {
    /// An IOR phase.
    Data(WorkloadSpec),
    /// An mdtest phase.
    Meta(MetaSpec),
    /// A find phase.
    Find(FindSpec),
    /// The timestamp file that find's `-newer` compares with.
    Timestamp,
}

/// What the phases so far left for the later ones: each task's items of
/// each write (by task, over all ranks), whether a tree was emptied, and
/// the timestamp file's time.
#[derive(Debug, Default)]
pub(super) struct Carried {
    pub(super) easy: Option<Vec<u64>>,
    pub(super) hard: Option<Vec<u64>>,
    pub(super) rnd4k: Option<Vec<u64>>,
    pub(super) rnd1mb: Option<Vec<u64>>,
    pub(super) md_easy: Option<Vec<u64>>,
    pub(super) md_hard: Option<Vec<u64>>,
    pub(super) md_easy_gone: bool,
    pub(super) md_hard_gone: bool,
    /// The timestamp file's modification time (seconds, nanoseconds).
    pub(super) stamp: Option<(i64, u32)>,
}

/// Where and how the phases run.
pub(super) struct Where<'a> {
    pub(super) cfg: &'a Config,
    /// Tasks per rank.
    pub(super) tasks: u32,
    /// Tasks in all.
    pub(super) workers: u32,
    /// IOR's `-C -Q 1` shift: the tasks of one node (0 on one node).
    pub(super) shift: u32,
}

impl Where<'_> {
    fn d(&self) -> &Path {
        &self.cfg.datadir
    }

    /// IOR's `-o` of ior-easy.
    pub(super) fn easy_path(&self) -> PathBuf {
        self.d().join("ior-easy").join("ior_file_easy")
    }

    /// ior-easy's layout.
    fn easy_layout(&self) -> Layout {
        match (self.cfg.easy_fpp, self.cfg.easy_unique_dir) {
            (false, _) => Layout::Shared,
            (true, false) => Layout::PerThread,
            (true, true) => Layout::PerThreadDir,
        }
    }
}

/// The directories io500 makes in the data directory for the phases of
/// `plan` (its `u_create_datadir`), relative to it.
pub(super) fn phase_dirs(plan: &[Phase]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for p in plan {
        if let Some(d) = dir_of(p.kind) {
            let d = PathBuf::from(d);
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    dirs
}

/// The directory of a phase family in the data directory.
fn dir_of(k: Kind) -> Option<&'static str> {
    Some(match k {
        Kind::IorEasy | Kind::IorRndEasyRead => "ior-easy",
        Kind::IorHard => "ior-hard",
        Kind::IorRnd { xfer } => rnd_dir(xfer),
        Kind::MdEasy => "mdtest-easy",
        Kind::MdHard => "mdtest-hard",
        Kind::Timestamp | Kind::Find { .. } => return None,
    })
}

/// The directory of a random phase.
pub(super) fn rnd_dir(xfer: u64) -> &'static str {
    if xfer == 4096 {
        "ior-rnd4K"
    } else {
        "ior-rnd1MB"
    }
}

/// Why a phase cannot run: the write it reads was not run (or its tree
/// was emptied), or find has no timestamp to compare with.
pub(super) fn missing_input(p: &Phase, c: &Carried) -> Option<&'static str> {
    if p.step == Act::Write || p.kind == Kind::Timestamp {
        return None;
    }
    let have = match p.kind {
        Kind::IorEasy | Kind::IorRndEasyRead => c.easy.is_some(),
        Kind::IorHard => c.hard.is_some(),
        Kind::IorRnd { xfer } => counts_of_rnd(c, xfer).is_some(),
        Kind::MdEasy => c.md_easy.is_some() && !c.md_easy_gone,
        Kind::MdHard => c.md_hard.is_some() && !c.md_hard_gone,
        Kind::Find { scope } => c.stamp.is_some() || scope == FindScope::Easy,
        Kind::Timestamp => true,
    };
    (!have).then_some(match p.kind {
        Kind::Find { .. } => "the timestamp phase did not run",
        _ => "the write phase it reads did not run",
    })
}

fn counts_of_rnd(c: &Carried, xfer: u64) -> Option<&Vec<u64>> {
    if xfer == 4096 {
        c.rnd4k.as_ref()
    } else {
        c.rnd1mb.as_ref()
    }
}

/// The step phase `p` runs: its workload, checked as the executor checks
/// every workload (an impossible config is refused before any phase).
pub(super) fn step_of(p: &Phase, w: &Where, c: &Carried) -> Result<Step, String> {
    let built = match p.kind {
        Kind::Timestamp => return Ok(Step::Timestamp),
        Kind::IorEasy => Step::Data(ior_easy(p, w, c)?),
        Kind::IorHard => Step::Data(ior_hard(p, w, c)?),
        Kind::IorRnd { xfer } => Step::Data(ior_rnd(p, w, c, xfer)?),
        Kind::IorRndEasyRead => Step::Data(ior_rnd_easy_read(w, c)?),
        Kind::MdEasy | Kind::MdHard => Step::Meta(mdtest(p, w, c)?),
        Kind::Find { scope } => Step::Find(find(w, c, scope)?),
    };
    Ok(built)
}

/// What every IOR phase shares: the tasks, IOR's `-o` naming, `-e` (fsync
/// at the end of a write, inside the timing), `-R` data checks, `-k`, and
/// the stonewall with IOR's wear-out on the write (`-D -O
/// stoneWallingWearOut=1`); a read reads what the write left.
fn ior_common(p: &Phase, w: &Where, path: PathBuf, counts: Option<&Vec<u64>>) -> RawWorkload {
    let write = p.step == Act::Write;
    RawWorkload {
        target: Some(w.d().to_path_buf()),
        ops: vec![if write { Op::Write } else { Op::Read }],
        threads: Some(w.tasks as u64),
        sync: Some(if write { SyncMode::End } else { SyncMode::None }),
        time_limit: write.then(|| stonewall(w.cfg)),
        wearout: write,
        item_counts: if write {
            Vec::new()
        } else {
            counts.cloned().unwrap_or_default()
        },
        verify: true,
        keep: true,
        seed: Some(SEED),
        naming: Some(FileNaming::Ior { path }),
        ..Default::default()
    }
}

/// The stonewall (`-D`, `-W`): the config's seconds, or none past what a
/// duration holds.
fn stonewall(cfg: &Config) -> Duration {
    Duration::from_secs(cfg.stonewall_s)
}

/// A built data spec with IOR's `-C -Q` shift for reads (counted over
/// every rank's tasks, so set on the checked spec).
fn data(raw: &RawWorkload, shift: u32, section: &str) -> Result<WorkloadSpec, String> {
    let mut s = raw.build().map_err(|e| in_io500_terms(&e, section))?;
    if raw.ops.iter().all(|o| !o.writes()) {
        s.reorder_offset = shift;
    }
    Ok(s)
}

/// ior-easy: large transfers, a file per task (or one file, a block each).
fn ior_easy(p: &Phase, w: &Where, c: &Carried) -> Result<WorkloadSpec, String> {
    let mut r = ior_common(p, w, w.easy_path(), c.easy.as_ref());
    r.layout = Some(w.easy_layout());
    r.xfer = Some(w.cfg.easy_xfer);
    r.block = Some(w.cfg.easy_block);
    data(&r, w.shift, "ior-easy")
}

/// ior-hard: 47,008-byte transfers into one shared file, task-interleaved.
fn ior_hard(p: &Phase, w: &Where, c: &Carried) -> Result<WorkloadSpec, String> {
    let path = w.d().join("ior-hard").join("file");
    let mut r = ior_common(p, w, path, c.hard.as_ref());
    r.layout = Some(Layout::Shared);
    r.xfer = Some(HARD_XFER);
    r.block = Some(HARD_XFER);
    r.segments = Some(w.cfg.hard_segments);
    data(&r, w.shift, "ior-hard")
}

/// ior-rnd4K / ior-rnd1MB: one shared file, each task's block shuffled
/// (IOR `-z`), segment after segment; no `-C`.
fn ior_rnd(p: &Phase, w: &Where, c: &Carried, xfer: u64) -> Result<WorkloadSpec, String> {
    let path = w.d().join(rnd_dir(xfer)).join("file");
    let mut r = ior_common(p, w, path, counts_of_rnd(c, xfer));
    let write = p.step == Act::Write;
    r.ops = vec![if write { Op::Randwrite } else { Op::Randread }];
    r.layout = Some(Layout::Shared);
    r.xfer = Some(xfer);
    r.block = Some(if xfer == 4096 {
        w.cfg.rnd4k_block
    } else {
        w.cfg.rnd1mb_block
    });
    r.segments = Some(RND_SEGMENTS);
    r.shuffle_in_block = true;
    data(&r, 0, rnd_dir(xfer))
}

/// ior-rnd4K-easy-read: 4 KiB reads at random offsets (IOR `-z -z`,
/// repeats allowed) of the ior-easy files, inside what each holds, until
/// the stonewall, with the wear-out; `-C -Q 2`: the data two nodes away.
fn ior_rnd_easy_read(w: &Where, c: &Carried) -> Result<WorkloadSpec, String> {
    let easy = c.easy.as_deref().unwrap_or_default();
    let fpp = w.cfg.easy_fpp;
    // Each task's 4 KiB slots: its own file's with -F, else its share of
    // the shared file's.
    let slots: Vec<u64> = if fpp {
        easy.iter().map(|n| n * w.cfg.easy_xfer / 4096).collect()
    } else {
        let all: u64 = easy.iter().sum::<u64>() * w.cfg.easy_xfer / 4096;
        vec![all / w.workers.max(1) as u64; w.workers as usize]
    };
    let r = RawWorkload {
        target: Some(w.d().to_path_buf()),
        ops: vec![Op::Randread],
        threads: Some(w.tasks as u64),
        layout: Some(w.easy_layout()),
        xfer: Some(4096),
        block: Some(4096),
        segments: Some(RND_SEGMENTS),
        time_limit: Some(stonewall(w.cfg)),
        wearout: true,
        item_counts: slots,
        random_repeats: true,
        keep: true,
        seed: Some(SEED),
        naming: Some(FileNaming::Ior {
            path: w.easy_path(),
        }),
        ..Default::default()
    };
    data(&r, if fpp { 2 * w.shift } else { 0 }, "ior-easy")
}

/// mdtest-easy / mdtest-hard: create (stonewall, wear-out, `-Y`), stat,
/// read (`-E -X`) or remove the files, the neighbour task's (`-N 1`)
/// after the create.
fn mdtest(p: &Phase, w: &Where, c: &Carried) -> Result<MetaSpec, String> {
    let easy = p.kind == Kind::MdEasy;
    let (n, family, counts) = if easy {
        (w.cfg.md_easy_n, "mdtest-easy", c.md_easy.as_ref())
    } else {
        (w.cfg.md_hard_n, "mdtest-hard", c.md_hard.as_ref())
    };
    let write = p.step == Act::Write;
    let op = match p.step {
        Act::Write => MetaOp::Create,
        Act::Stat => MetaOp::Stat,
        Act::Read => MetaOp::Read,
        _ => MetaOp::Delete,
    };
    let bytes = if easy { 0 } else { MD_HARD_BYTES };
    let r = RawMeta {
        target: Some(w.d().join(family)),
        ops: vec![op],
        threads: Some(w.tasks as u64),
        files: Some(n),
        file_size: Some(FileSize::Fixed { bytes }),
        record_size: Some(bytes.max(1)),
        same_dir: !easy,
        time_limit: write.then(|| stonewall(w.cfg)),
        wearout: write,
        item_counts: if write {
            Vec::new()
        } else {
            counts.cloned().unwrap_or_default()
        },
        sync_phase: write,
        // mdtest -e 3901: the bytes written, and no read past them.
        read_bytes: (op == MetaOp::Read).then_some(bytes),
        verify: !easy,
        seed: Some(SEED),
        keep: true,
        naming: Some(MetaNaming::Mdtest),
        // mdtest's own system calls: stat(2) by the full path (not a
        // lookup in a held directory), no read(2) past the data.
        mdtest_calls: true,
        ..Default::default()
    };
    let mut s = r.build().map_err(|e| in_io500_terms(&e, family))?;
    // mdtest -N 1: the next task's files (over every rank's tasks, so set
    // on the checked spec).
    if !write {
        s.stride = 1;
    }
    Ok(s)
}

/// find: the entries of the data directory (or one mdtest tree) that
/// match io500's criteria.
fn find(w: &Where, c: &Carried, scope: FindScope) -> Result<FindSpec, String> {
    let strict = scope != FindScope::Easy;
    let root = match scope {
        FindScope::All => w.d().to_path_buf(),
        FindScope::Easy => w.d().join("mdtest-easy"),
        FindScope::Hard => w.d().join("mdtest-hard"),
    };
    RawFind {
        root: Some(root),
        threads: Some(w.tasks as u64),
        name: Some("*01*".into()),
        size: strict.then_some(MD_HARD_BYTES),
        newer_than: if strict { c.stamp } else { None },
    }
    .build()
    .map_err(|e| in_io500_terms(&e, "find"))
}

/// A workload's refusal with the io500 options behind the flags it names
/// (the phase's name goes before it).
fn in_io500_terms(e: &spec::SpecError, section: &str) -> String {
    let terms: Vec<String> = e
        .flags()
        .iter()
        .filter_map(|f| match *f {
            "--xfer" => Some(format!("[{section}] transferSize")),
            "--block" | "--size" => Some(format!("[{section}] blockSize")),
            "--segments" => Some("[ior-hard] segmentCount".into()),
            "--files" => Some(format!("[{section}] n")),
            "--time" => Some("[debug] stonewall-time".into()),
            "--threads" => Some("--tasks".into()),
            _ => None,
        })
        .collect();
    if terms.is_empty() {
        e.to_string()
    } else {
        format!("{e} (in io500's terms: {})", terms.join(", "))
    }
}

/// Records what a finished phase leaves for the later ones: a write's
/// item counts (`items`, by task), a completed delete's emptied tree.
pub(super) fn carry(p: &Phase, c: &mut Carried, items: &[u64], completed: bool) {
    let counts = Some(items.to_vec());
    match (p.kind, p.step) {
        (Kind::IorEasy, Act::Write) => c.easy = counts,
        (Kind::IorHard, Act::Write) => c.hard = counts,
        (Kind::IorRnd { xfer: 4096 }, Act::Write) => c.rnd4k = counts,
        (Kind::IorRnd { .. }, Act::Write) => c.rnd1mb = counts,
        (Kind::MdEasy, Act::Write) => c.md_easy = counts,
        (Kind::MdHard, Act::Write) => c.md_hard = counts,
        (Kind::MdEasy, Act::Delete) if completed => c.md_easy_gone = true,
        (Kind::MdHard, Act::Delete) if completed => c.md_hard_gone = true,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::phases::ALL;
    use super::*;

    fn phase(n: &str) -> Phase {
        *ALL.iter().find(|p| p.name == n).unwrap()
    }

    fn cfg() -> Config {
        Config {
            datadir: "/d".into(),
            stonewall_s: 3,
            ..Config::default()
        }
    }

    #[test]
    fn the_phases_are_io500s_calls() {
        let cfg = cfg();
        let w = Where {
            cfg: &cfg,
            tasks: 2,
            workers: 4,
            shift: 2,
        };
        let mut c = Carried::default();
        let Ok(Step::Data(s)) = step_of(&phase("ior-easy-write"), &w, &c) else {
            panic!()
        };
        assert_eq!(
            (s.xfer, s.layout, s.sync, s.wearout, s.verify, s.keep),
            (2 << 20, Layout::PerThread, SyncMode::End, true, true, true)
        );
        assert_eq!(s.time_limit, Some(Duration::from_secs(3)));
        assert_eq!(s.reorder_offset, 0, "a write writes its own data");
        carry(&phase("ior-easy-write"), &mut c, &[5, 5, 5, 5], true);
        let Ok(Step::Data(s)) = step_of(&phase("ior-easy-read"), &w, &c) else {
            panic!()
        };
        assert_eq!((s.reorder_offset, s.time_limit), (2, None));
        assert_eq!(s.item_counts, [5, 5, 5, 5]);
        let Ok(Step::Data(s)) = step_of(&phase("ior-rnd4K-easy-read"), &w, &c) else {
            panic!()
        };
        // 5 transfers of 2 MiB: 2560 slots of 4 KiB each; -C -Q 2.
        assert_eq!(s.item_counts, [2560; 4]);
        assert!(s.random_repeats && s.wearout);
        assert_eq!(s.reorder_offset, 4);
        carry(&phase("mdtest-hard-write"), &mut c, &[7, 7, 7, 7], true);
        let Ok(Step::Meta(m)) = step_of(&phase("mdtest-hard-read"), &w, &c) else {
            panic!()
        };
        assert_eq!((m.stride, m.same_dir, m.verify), (1, true, true));
        assert_eq!(m.target, PathBuf::from("/d/mdtest-hard"));
        assert!(
            missing_input(&phase("find"), &c).is_some(),
            "no timestamp yet"
        );
        c.stamp = Some((1, 2));
        let Ok(Step::Find(f)) = step_of(&phase("find"), &w, &c) else {
            panic!()
        };
        assert_eq!((f.size, f.newer_than), (Some(3901), Some((1, 2))));
        assert_eq!(
            phase_dirs(&super::super::phases::plan(false)),
            ["ior-easy", "mdtest-easy", "ior-hard", "mdtest-hard"].map(PathBuf::from)
        );
    }
}
