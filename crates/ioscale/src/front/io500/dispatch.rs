//! What each io500 phase runs: its items per task, whose files a task
//! works on, and the [`Work`] that does one item.
//!
//! Write phases run until their item count or the stonewall (with IOR's and
//! mdtest's wear-out); read, stat and delete phases then work through what
//! the write phase recorded in [`State`], shifted to another task's files
//! where io500 asks for it (`-C -Q 1`, `mdtest -N 1`).

use std::path::PathBuf;
use std::time::Duration;

use super::config::Config;
use super::exec::{self, Ctx, PhaseRun, Shape, Work};
use super::phases::{FindScope, Kind, Phase, Step};
use super::work::{
    self, FindWork, IorWork, MdOp, MdWork, Names, RandReadWork, HARD_XFER, MD_HARD_BYTES,
};
use super::State;

/// Makes the work of one task (by global task index).
type Make<'a> = dyn Fn(u32) -> Result<Box<dyn Work>, String> + Sync + 'a;

/// What every phase of one run shares.
struct Run<'a> {
    ctx: &'a Ctx<'a>,
    cfg: &'a Config,
    names: &'a Names,
    /// Tasks in all.
    nw: u32,
    /// A write phase (it records its item counts for the reads).
    write: bool,
    /// IOR's `-C -Q 1` shift for reads.
    shift: u32,
}

/// The item offsets of one task's transfers.
type Offsets = Box<dyn Fn(u64) -> u64 + Send>;

impl Run<'_> {
    /// Runs the phase; writes stop at the stonewall and wear out.
    fn phase(&self, limit: &(dyn Fn(u32) -> u64 + Sync), make: &Make) -> PhaseRun {
        let shape = Shape {
            limit,
            deadline: self
                .write
                .then_some(Duration::from_secs(self.cfg.stonewall_s)),
            wearout: self.write,
        };
        exec::run_phase(self.ctx, &shape, make)
    }

    /// An IOR phase: write `per_task` items, or read back what the owner
    /// of each file wrote (`counts`), with transfers of `xfer` bytes; the
    /// owner's file and pattern id come from `file`, the transfers'
    /// offsets from `offsets`.
    fn ior(
        &self,
        per_task: u64,
        counts: &Option<Vec<u64>>,
        xfer: u64,
        file: &(dyn Fn(u32) -> (PathBuf, u64) + Sync),
        offsets: &(dyn Fn(u32) -> Offsets + Sync),
    ) -> PhaseRun {
        let counts = counts.clone().unwrap_or_default();
        let (write, shift, nw) = (self.write, self.shift, self.nw);
        // The task whose file task `w` works on (itself when writing).
        let owner = move |w: u32| if write { w } else { (w + shift) % nw };
        let limit = |w: u32| {
            if write {
                per_task
            } else {
                counts[owner(w) as usize]
            }
        };
        let dirs = &*self.names.dirs;
        let make = |w: u32| -> Result<Box<dyn Work>, String> {
            let o = owner(w);
            let (path, file_id) = file(o);
            Ok(boxed(IorWork {
                file: IorWork::open(dirs, &path, write)?,
                path,
                buf: vec![0; xfer as usize],
                write,
                check: !write,
                file_id,
                offset: offsets(o),
            }))
        };
        self.phase(&limit, &make)
    }
}

fn boxed<W: Work + 'static>(w: W) -> Box<dyn Work> {
    Box::new(w)
}

/// The item counts a write phase leaves for its reads.
fn items(run: &PhaseRun) -> Option<Vec<u64>> {
    Some(run.tasks.iter().map(|t| t.items).collect())
}

/// Runs phase `p`; `None` when it could not start (e.g. the timestamp
/// broadcast failed).
pub(super) fn run_one(
    p: &Phase,
    ctx: &Ctx,
    cfg: &Config,
    names: &Names,
    st: &mut State,
    shift: u32,
) -> Option<PhaseRun> {
    let r = Run {
        ctx,
        cfg,
        names,
        nw: names.workers,
        write: p.step == Step::Write,
        shift,
    };
    match p.kind {
        Kind::Timestamp => timestamp(&r, st),
        Kind::IorEasy => Some(ior_easy(&r, st)),
        Kind::IorHard => Some(ior_hard(&r, st)),
        Kind::IorRnd { xfer } => Some(ior_rnd(&r, st, xfer)),
        Kind::IorRndEasyRead => Some(ior_rnd_easy_read(&r)),
        Kind::MdEasy | Kind::MdHard => Some(mdtest(&r, p, st)),
        Kind::Find { scope } => Some(find(&r, st, scope)),
    }
}

/// Rank 0 makes the file find's `-newer` compares with; every rank learns
/// its time.
fn timestamp(r: &Run, st: &mut State) -> Option<PhaseRun> {
    let t0 = std::time::Instant::now();
    let mut ns = 0i128;
    if r.ctx.coord.rank() == 0 {
        let path = r.cfg.resultdir.join("timestampfile");
        if crate::output::write_atomic(&path, b"").is_ok() {
            if let Ok(m) = std::fs::metadata(&path) {
                use std::os::unix::fs::MetadataExt;
                ns = m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128;
            }
        }
    }
    let ns = r
        .ctx
        .coord
        .broadcast_as(&ns.to_string())
        .ok()?
        .parse::<i128>()
        .ok()?;
    st.stamp_ns = Some(ns);
    Some(PhaseRun {
        tasks: Vec::new(),
        elapsed_s: t0.elapsed().as_secs_f64(),
        cpu: (0.0, 0.0),
        latencies: Default::default(),
        gathered_bytes: None,
        interrupted: false,
        resources: None,
    })
}

/// ior-easy: large transfers, a file per task (or one file, a block each).
fn ior_easy(r: &Run, st: &mut State) -> PhaseRun {
    let (xfer, block, fpp) = (r.cfg.easy_xfer, r.cfg.easy_block, r.cfg.easy_fpp);
    let names = r.names;
    let file = |o: u32| (names.easy_file(o), if fpp { o as u64 } else { 0 });
    let offsets = |o: u32| -> Offsets {
        if fpp {
            Box::new(move |i| i * xfer)
        } else {
            Box::new(move |i| o as u64 * block + i * xfer)
        }
    };
    let run = r.ior(block / xfer, &st.easy, xfer, &file, &offsets);
    if r.write {
        st.easy = items(&run);
    }
    run
}

/// ior-hard: 47,008-byte transfers into one shared file, task-interleaved.
fn ior_hard(r: &Run, st: &mut State) -> PhaseRun {
    let nw = r.nw as u64;
    let path = r.names.hard_file();
    let file = |_o: u32| (path.clone(), 0);
    let offsets = |o: u32| -> Offsets { Box::new(move |i| (i * nw + o as u64) * HARD_XFER) };
    let run = r.ior(r.cfg.hard_segments, &st.hard, HARD_XFER, &file, &offsets);
    if r.write {
        st.hard = items(&run);
    }
    run
}

/// ior-rnd4K / ior-rnd1MB: each task's blocks of one shared file, the
/// transfers of a block in a fixed shuffled order.
fn ior_rnd(r: &Run, st: &mut State, xfer: u64) -> PhaseRun {
    let (block, slot) = if xfer == 4096 {
        (r.cfg.rnd4k_block, &mut st.rnd4k)
    } else {
        (r.cfg.rnd1mb_block, &mut st.rnd1mb)
    };
    let per_block = block / xfer;
    let counts = slot.clone().unwrap_or_default();
    let write = r.write;
    let limit = |w: u32| {
        if write {
            per_block.saturating_mul(10_000_000)
        } else {
            counts[w as usize]
        }
    };
    let (path, nw, dirs) = (r.names.rnd_file(xfer), r.nw as u64, &*r.names.dirs);
    let make = |w: u32| -> Result<Box<dyn Work>, String> {
        let seed = work::SEED ^ w as u64;
        Ok(boxed(IorWork {
            file: IorWork::open(dirs, &path, write)?,
            path: path.clone(),
            buf: vec![0; xfer as usize],
            write,
            check: !write,
            file_id: 0,
            offset: Box::new(move |i| {
                let (seg, j) = (i / per_block, i % per_block);
                (seg * nw + w as u64) * block + work::shuffled(j, per_block, seed) * xfer
            }),
        }))
    };
    let run = r.phase(&limit, &make);
    if write {
        *slot = items(&run);
    }
    run
}

/// ior-rnd4K-easy-read: 4 KiB reads at random offsets of the ior-easy
/// files, until the stonewall.
fn ior_rnd_easy_read(r: &Run) -> PhaseRun {
    // -C -Q 2: the data two nodes away (its own on one or two nodes).
    let (shift, nw, names) = (r.shift, r.nw, r.names);
    let owner = |w: u32| (w + 2 * shift) % nw;
    let limit = |_w: u32| 10_000_000u64;
    let make = |w: u32| -> Result<Box<dyn Work>, String> {
        let path = names.easy_file(owner(w));
        let file = IorWork::open(&names.dirs, &path, false)?;
        let size = file
            .metadata()
            .map_err(|e| format!("stat {}: {e}", path.display()))?
            .len();
        if size < 4096 {
            return Err(format!(
                "{} holds {size} bytes, less than one 4 KiB read",
                path.display()
            ));
        }
        Ok(boxed(RandReadWork {
            file,
            path,
            size,
            buf: vec![0; 4096],
            rng: work::SEED ^ w as u64,
        }))
    };
    let shape = Shape {
        limit: &limit,
        deadline: Some(Duration::from_secs(r.cfg.stonewall_s)),
        wearout: true,
    };
    exec::run_phase(r.ctx, &shape, &make)
}

/// mdtest-easy / mdtest-hard: create, stat, read or remove the files.
fn mdtest(r: &Run, p: &Phase, st: &mut State) -> PhaseRun {
    let easy = p.kind == Kind::MdEasy;
    let n = if easy {
        r.cfg.md_easy_n
    } else {
        r.cfg.md_hard_n
    };
    let counts = if easy { &st.md_easy } else { &st.md_hard }
        .clone()
        .unwrap_or_default();
    // mdtest -N 1: stat, read and remove the neighbour task's files.
    let (nw, write) = (r.nw, r.write);
    let owner = |w: u32| if write { w } else { (w + 1) % nw };
    let limit = |w: u32| if write { n } else { counts[owner(w) as usize] };
    let op = match p.step {
        Step::Write => MdOp::Create,
        Step::Stat => MdOp::Stat,
        Step::Read => MdOp::Read,
        _ => MdOp::Delete,
    };
    let bytes = if easy { 0 } else { MD_HARD_BYTES as usize };
    let names = r.names;
    let make = |w: u32| -> Result<Box<dyn Work>, String> {
        let o = owner(w);
        let dir = names.md_dir(easy, o);
        Ok(boxed(MdWork {
            handle: names.dirs.open(&dir)?,
            dir,
            owner: o,
            op,
            bytes,
            buf: vec![0; bytes],
        }))
    };
    let run = r.phase(&limit, &make);
    let (made, gone) = if easy {
        (&mut st.md_easy, &mut st.md_easy_gone)
    } else {
        (&mut st.md_hard, &mut st.md_hard_gone)
    };
    if write {
        *made = items(&run);
    } else if op == MdOp::Delete && run.first_error().is_none() && !run.interrupted {
        *gone = true;
    }
    run
}

/// find: the files of the mdtest trees that match io500's criteria.
fn find(r: &Run, st: &State, scope: FindScope) -> PhaseRun {
    let root = match scope {
        FindScope::All => r.names.d.clone(),
        FindScope::Easy => r.names.d.join("mdtest-easy"),
        FindScope::Hard => r.names.d.join("mdtest-hard"),
    };
    let strict = scope != FindScope::Easy;
    let newer = st.stamp_ns;
    let (limit, workers) = (|_w: u32| 1u64, r.nw);
    let make = |w: u32| -> Result<Box<dyn Work>, String> {
        Ok(boxed(FindWork {
            root: root.clone(),
            w,
            workers,
            size: strict.then_some(MD_HARD_BYTES),
            newer_ns: if strict { newer } else { None },
        }))
    };
    let shape = Shape {
        limit: &limit,
        deadline: None,
        wearout: false,
    };
    exec::run_phase(r.ctx, &shape, &make)
}
