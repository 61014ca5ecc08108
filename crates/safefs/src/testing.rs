//! The race-test harness (feature `testing`): while a command works on a
//! target, a saboteur thread swaps, deletes and renames paths under it at
//! random (seeded) moments, and plants FIFOs, links and hard links to a
//! VICTIM directory of foreign files under ioscale's names; after every
//! iteration the VICTIM is checked file by file (kind, length, content
//! hash, permission bits and the extended attribute ioscale's metadata
//! phases set) and must be exactly as planted — nothing lost, changed or
//! added.
//!
//! ```no_run
//! use safefs::testing::{race, RaceConfig};
//! # let scratch = std::path::Path::new("/tmp/x");
//! let report = race(&RaceConfig::default(), scratch, |target, _i| {
//!     // e.g. run `ioscale run --size 1m TARGET` and wait for it
//!     let _ = std::process::Command::new("ioscale").arg("run").arg(target).status();
//! })
//! .expect("foreign files intact");
//! assert!(report.strikes > 0);
//! ```
//!
//! Every path under `scratch` is the harness's: the target of iteration
//! `i` is `scratch/t.<i>`, the victim `scratch/VICTIM`. A failure names the
//! seed, the iteration and the strikes made so far, so it can be replayed.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stats::bootstrap::SplitMix64;

/// A small seeded generator ([`stats::bootstrap::SplitMix64`]): the same
/// seed gives the same choices.
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(SplitMix64::new(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// FNV-1a, 64 bits: the content hash the victim is checked by.
pub fn hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Names ioscale's schemes produce; the victim holds files by these names
/// and the saboteur plants links by them.
pub const IOSCALE_NAMES: &[&str] = &[
    "ioscale.d",
    "ioscale-meta.d",
    ".ioscale-marker",
    ".ioscale-meta-marker",
    ".ioscale-marker.lock",
    "file.00000000",
    "file.00000001",
    "dir.00000000",
    "dir.00000001",
    "thr.000",
    "thr.001",
    "f0.0",
    "0",
    "1",
];

/// The foreign files: planted once, checked after every iteration.
#[derive(Debug)]
pub struct Victim {
    root: PathBuf,
    files: BTreeMap<PathBuf, (u64, u64, Attrs)>,
    dirs: Vec<PathBuf>,
}

#[derive(Debug, PartialEq, Eq)]
enum Seen {
    File(u64, u64, Attrs),
    Dir,
    Other,
}

/// What a metadata phase could change of a file without touching its
/// bytes: its permission bits, and whether it carries ioscale's extended
/// attribute (`user.ioscale`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Attrs {
    mode: u32,
    xattr: bool,
}

impl Attrs {
    fn of(p: &Path, m: &fs::Metadata) -> Attrs {
        use std::os::unix::fs::PermissionsExt;
        let mut buf = [0u8; 64];
        Attrs {
            mode: m.permissions().mode() & 0o7777,
            xattr: rustix::fs::lgetxattr(p, "user.ioscale", &mut buf[..]).is_ok(),
        }
    }
}

impl Victim {
    /// Plants the victim directory `root` (which must not exist): files
    /// named like ioscale's at several depths, with seeded content.
    pub fn plant(root: &Path, seed: u64) -> io::Result<Victim> {
        let mut rng = Rng::new(seed ^ 0x5eed);
        fs::create_dir(root)?;
        let dirs: Vec<PathBuf> = [
            "dir.00000000",
            "thr.000",
            "0",
            "ioscale.d",
            "ioscale.d/dir.00000000",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        for d in &dirs {
            fs::create_dir(root.join(d))?;
        }
        let mut files = BTreeMap::new();
        let names = [
            "file.00000000",
            "file.00000001",
            ".ioscale-marker",
            ".ioscale-meta-marker",
            "keep.txt",
            "dir.00000000/file.00000000",
            "thr.000/f0.0",
            "0/ior.bin",
            "ioscale.d/file.00000000",
            "ioscale.d/.ioscale-marker",
            "ioscale.d/dir.00000000/file.00000000",
        ];
        for n in names {
            let len = 1 + rng.below(8192) as usize;
            let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let p = root.join(n);
            fs::write(&p, &data)?;
            let attrs = Attrs::of(&p, &fs::symlink_metadata(&p)?);
            files.insert(PathBuf::from(n), (len as u64, hash(&data), attrs));
        }
        Ok(Victim {
            root: root.to_path_buf(),
            files,
            dirs,
        })
    }

    /// The victim directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The planted files (relative names).
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.files.keys().map(PathBuf::as_path)
    }

    fn walk(dir: &Path, rel: &Path, out: &mut BTreeMap<PathBuf, Seen>) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let r = rel.join(e.file_name());
            let Ok(m) = fs::symlink_metadata(e.path()) else {
                continue;
            };
            if m.is_dir() {
                out.insert(r.clone(), Seen::Dir);
                Self::walk(&e.path(), &r, out);
            } else if m.is_file() {
                let data = fs::read(e.path()).unwrap_or_default();
                let attrs = Attrs::of(&e.path(), &m);
                out.insert(r, Seen::File(data.len() as u64, hash(&data), attrs));
            } else {
                out.insert(r, Seen::Other);
            }
        }
    }

    /// Checks the victim is exactly as planted; the error lists every
    /// difference (missing, changed, replaced or added entries).
    pub fn check(&self) -> Result<(), String> {
        let mut seen = BTreeMap::new();
        Self::walk(&self.root, Path::new(""), &mut seen);
        let mut bad = Vec::new();
        for (p, &(len, h, attrs)) in &self.files {
            match seen.remove(p) {
                Some(Seen::File(l, hh, a)) if l == len && hh == h && a == attrs => {}
                Some(Seen::File(l, hh, a)) if l == len && hh == h => bad.push(format!(
                    "{} changed its attributes ({a:?}, planted {attrs:?})",
                    p.display()
                )),
                Some(Seen::File(l, _, _)) => bad.push(format!(
                    "{} changed ({l} bytes, planted {len})",
                    p.display()
                )),
                Some(s) => bad.push(format!("{} replaced by {s:?}", p.display())),
                None => bad.push(format!("{} missing", p.display())),
            }
        }
        for d in &self.dirs {
            if seen.remove(d) != Some(Seen::Dir) {
                bad.push(format!("directory {} missing or replaced", d.display()));
            }
        }
        for p in seen.keys() {
            bad.push(format!("{} added", p.display()));
        }
        if bad.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "VICTIM {} damaged: {}",
                self.root.display(),
                bad.join("; ")
            ))
        }
    }
}

/// Makes random mischief under a target.
#[derive(Debug)]
pub struct Saboteur {
    target: PathBuf,
    victim: PathBuf,
    victim_files: Vec<PathBuf>,
    rng: Rng,
    n: u64,
}

impl Saboteur {
    /// A saboteur of `target` that points its links into `victim`.
    pub fn new(target: &Path, victim: &Victim, seed: u64) -> Self {
        Saboteur {
            target: target.to_path_buf(),
            victim: victim.path().to_path_buf(),
            victim_files: victim.files().map(Path::to_path_buf).collect(),
            rng: Rng::new(seed),
            n: 0,
        }
    }

    fn entries(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let (mut dirs, mut files) = (Vec::new(), Vec::new());
        let mut stack = vec![self.target.clone()];
        while let Some(d) = stack.pop() {
            let Ok(rd) = fs::read_dir(&d) else { continue };
            for e in rd.flatten() {
                let Ok(ft) = e.file_type() else { continue };
                if ft.is_dir() {
                    dirs.push(e.path());
                    if dirs.len() < 4096 {
                        stack.push(e.path());
                    }
                } else if ft.is_file() {
                    files.push(e.path());
                }
                if files.len() > 4096 {
                    break;
                }
            }
        }
        (dirs, files)
    }

    fn pick<'a>(&mut self, v: &'a [PathBuf]) -> Option<&'a PathBuf> {
        if v.is_empty() {
            None
        } else {
            v.get(self.rng.below(v.len() as u64) as usize)
        }
    }

    /// Moves the directory `dir` aside and puts a symbolic link to the
    /// victim (or one of its subdirectories) in its place.
    pub fn swap_dir_for_symlink(&mut self, dir: &Path) -> io::Result<String> {
        self.n += 1;
        let aside = aside(dir, "moved", self.n);
        fs::rename(dir, &aside)?;
        let to = match self.rng.below(3) {
            0 => self.victim.clone(),
            1 => self.victim.join("ioscale.d"),
            _ => self.victim.join("dir.00000000"),
        };
        std::os::unix::fs::symlink(&to, dir)?;
        Ok(format!(
            "swapped dir {} for a link to {}",
            dir.display(),
            to.display()
        ))
    }

    /// Makes one random strike under the target; `None` when there was
    /// nothing to strike or it lost a race with the command.
    pub fn strike(&mut self) -> Option<String> {
        let (dirs, files) = self.entries();
        self.n += 1;
        let n = self.n;
        let vf = self.pick(&self.victim_files.clone()).cloned()?;
        let vfile = self.victim.join(vf);
        let r: io::Result<String> = match self.rng.below(8) {
            0 => {
                let d = self.pick(&dirs)?.clone();
                self.swap_dir_for_symlink(&d)
            }
            1 => {
                let f = self.pick(&files)?.clone();
                fs::rename(&f, aside(&f, "moved", n))
                    .and_then(|()| std::os::unix::fs::symlink(&vfile, &f))
                    .map(|()| {
                        format!(
                            "swapped file {} for a link to {}",
                            f.display(),
                            vfile.display()
                        )
                    })
            }
            2 => {
                let f = self.pick(&files)?.clone();
                fs::remove_file(&f).map(|()| format!("deleted {}", f.display()))
            }
            3 => {
                let d = self.pick(&dirs)?.clone();
                fs::remove_dir_all(&d).map(|()| format!("deleted tree {}", d.display()))
            }
            4 => {
                let all: Vec<PathBuf> = dirs.iter().chain(files.iter()).cloned().collect();
                let p = self.pick(&all)?.clone();
                fs::rename(&p, aside(&p, "renamed", n)).map(|()| format!("renamed {}", p.display()))
            }
            5 => {
                // A link named like ioscale's, planted where ioscale may
                // look for (or create) that name.
                let mut places = dirs.clone();
                places.push(self.target.clone());
                let d = self.pick(&places)?.clone();
                let name = IOSCALE_NAMES[self.rng.below(IOSCALE_NAMES.len() as u64) as usize];
                let to = if self.rng.below(2) == 0 {
                    self.victim.clone()
                } else {
                    vfile.clone()
                };
                std::os::unix::fs::symlink(&to, d.join(name)).map(|()| {
                    format!(
                        "planted link {} -> {}",
                        d.join(name).display(),
                        to.display()
                    )
                })
            }
            6 => {
                // A FIFO named like ioscale's: an open that blocks on it
                // hangs the command (which `run_bounded` reports).
                let mut places = dirs.clone();
                places.push(self.target.clone());
                let d = self.pick(&places)?.clone();
                let name = IOSCALE_NAMES[self.rng.below(IOSCALE_NAMES.len() as u64) as usize];
                let p = d.join(name);
                rustix::fs::mknodat(
                    rustix::fs::CWD,
                    &p,
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o644),
                    0,
                )
                .map_err(io::Error::from)
                .map(|()| format!("planted FIFO {}", p.display()))
            }
            _ => {
                // A hard link to a victim file under one of ioscale's
                // names: truncating or rewriting it would damage the victim.
                let mut places = dirs.clone();
                places.push(self.target.clone());
                let d = self.pick(&places)?.clone();
                let name = IOSCALE_NAMES[self.rng.below(IOSCALE_NAMES.len() as u64) as usize];
                fs::hard_link(&vfile, d.join(name)).map(|()| {
                    format!(
                        "planted hard link {} of {}",
                        d.join(name).display(),
                        vfile.display()
                    )
                })
            }
        };
        r.ok()
    }
}

fn aside(p: &Path, what: &str, n: u64) -> PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(format!(".{what}-{n}"));
    PathBuf::from(s)
}

/// Bounds of a race test.
#[derive(Debug, Clone)]
pub struct RaceConfig {
    /// The seed of every random choice.
    pub seed: u64,
    /// Iterations to run (fewer when the wall limit comes first).
    pub iterations: u32,
    /// The time after which no new iteration starts.
    pub wall_limit: Duration,
    /// The longest pause between two strikes.
    pub max_pause: Duration,
    /// The longest one iteration's command may take. A command that has
    /// not returned by then (an open blocked on a planted FIFO, say) would
    /// hang the whole test run, so the saboteur prints the seed, the
    /// iteration and its strikes and aborts the process instead.
    pub hang_limit: Duration,
}

impl Default for RaceConfig {
    fn default() -> Self {
        RaceConfig {
            seed: 13,
            iterations: 200,
            wall_limit: Duration::from_secs(60),
            max_pause: Duration::from_millis(2),
            hang_limit: Duration::from_secs(300),
        }
    }
}

/// What a race test did.
#[derive(Debug, Default)]
pub struct RaceReport {
    /// Iterations run.
    pub iterations: u32,
    /// Strikes that changed something under a target.
    pub strikes: u64,
    /// The strikes of the last iteration, for a failure message.
    pub last_strikes: Vec<String>,
}

/// Runs `command(target, iteration)` `cfg.iterations` times (within
/// `cfg.wall_limit`) while a saboteur strikes under the target, checking
/// the victim after every iteration. `scratch` must be an empty directory
/// (or not exist). Returns the first damage found, with the seed and the
/// strikes that preceded it.
pub fn race<F>(cfg: &RaceConfig, scratch: &Path, mut command: F) -> Result<RaceReport, String>
where
    F: FnMut(&Path, u32),
{
    fs::create_dir_all(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let victim = Victim::plant(&scratch.join("VICTIM"), cfg.seed)
        .map_err(|e| format!("planting the victim: {e}"))?;
    let start = Instant::now();
    let mut report = RaceReport::default();
    let mut seeds = Rng::new(cfg.seed);
    for i in 0..cfg.iterations {
        if start.elapsed() > cfg.wall_limit {
            break;
        }
        let target = scratch.join(format!("t.{i}"));
        fs::create_dir(&target).map_err(|e| format!("{}: {e}", target.display()))?;
        let done = Arc::new(AtomicBool::new(false));
        let strikes = Arc::new(AtomicU64::new(0));
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut sab = Saboteur::new(&target, &victim, seeds.next_u64());
        let max_pause = cfg.max_pause.as_micros().max(1) as u64;
        let pause_seed = seeds.next_u64();
        let th = {
            let (done, strikes, log) = (done.clone(), strikes.clone(), log.clone());
            let (seed, hang_limit) = (cfg.seed, cfg.hang_limit);
            std::thread::spawn(move || {
                let mut rng = Rng::new(pause_seed);
                let began = Instant::now();
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_micros(rng.below(max_pause)));
                    if let Some(s) = sab.strike() {
                        strikes.fetch_add(1, Ordering::Relaxed);
                        log.lock().unwrap().push(s);
                    }
                    if began.elapsed() > hang_limit {
                        hung(seed, i, hang_limit, &log.lock().unwrap());
                    }
                }
            })
        };
        command(&target, i);
        done.store(true, Ordering::Relaxed);
        th.join().map_err(|_| "the saboteur panicked".to_string())?;
        report.iterations = i + 1;
        report.strikes += strikes.load(Ordering::Relaxed);
        report.last_strikes = std::mem::take(&mut *log.lock().unwrap());
        if let Err(e) = victim.check() {
            return Err(format!(
                "seed {} iteration {i}: {e}\nstrikes in that iteration:\n  {}",
                cfg.seed,
                report.last_strikes.join("\n  ")
            ));
        }
        // std's remove_dir_all removes links, never what they point to.
        fs::remove_dir_all(&target).map_err(|e| format!("removing {}: {e}", target.display()))?;
        victim.check().map_err(|e| {
            format!(
                "seed {} iteration {i}, after removing the target: {e}",
                cfg.seed
            )
        })?;
    }
    Ok(report)
}

/// Ends the process when one iteration's command hangs: a test that never
/// returns would stall the whole suite until an outside timeout, with no
/// word of why.
fn hung(seed: u64, i: u32, limit: Duration, strikes: &[String]) -> ! {
    let shown = &strikes[strikes.len().saturating_sub(20)..];
    eprintln!(
        "seed {seed} iteration {i}: the command has not returned after {limit:?}; \
         aborting. The last {} of {} strikes:\n  {}",
        shown.len(),
        strikes.len(),
        shown.join("\n  ")
    );
    std::process::abort()
}

/// Runs `cmd` (stdout and stderr discarded unless the caller set them) and
/// waits at most `limit`; a command still running then is killed and
/// `Ok(None)` returned. For pointing [`race`] at the ioscale binary:
/// `race(&cfg, scratch, |t, _| { run_bounded(Command::new(bin).args(["run", "-q"]).arg(t), limit).unwrap(); })`.
pub fn run_bounded(
    cmd: &mut std::process::Command,
    limit: Duration,
) -> io::Result<Option<std::process::ExitStatus>> {
    let mut child = cmd.spawn()?;
    let end = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(Some(st));
        }
        if Instant::now() >= end {
            child.kill()?;
            child.wait()?;
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
