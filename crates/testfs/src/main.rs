//! Command line of `ioscale-testfs`: parses the flags, mounts the
//! pass-through file system in the foreground, and unmounts it cleanly on
//! SIGTERM, SIGINT or SIGHUP (or when someone runs `fusermount3 -u`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use fuser::{Config, MountOption, Session, SessionACL};
use testfs::fs::{FsOptions, PassFs};
use testfs::inject::{Faults, Injector, Timing};
use testfs::parse::{parse_duration, parse_rate, parse_size};
use testfs::shape::Step;

const EXAMPLES: &str = "Examples:
  # serve /srv/data at /mnt/t, 2 ms per read/write request (the EFS shape)
  ioscale-testfs --delay 2ms /srv/data /mnt/t

  # a noisy server: each data request takes 1..5 ms, drawn with seed 7
  ioscale-testfs --delay 3ms --delay-jitter 2ms --seed 7 /srv/data /mnt/t

  # a 100 MiB/s link shared by all clients, 1 ms per metadata request
  ioscale-testfs --bw 100m --meta-delay 1ms /srv/data /mnt/t

  # a burst-credit volume: 100 MiB/s until 512 MiB of credit are spent,
  # then 10 MiB/s (the refill); one log line per second
  ioscale-testfs --bw 100m --burst-credit 512m --baseline 10m \\
      --interval-log 1s /srv/data /mnt/t

  # 2 ms per data request, 20 ms from 30 s after the first one
  ioscale-testfs --delay 2ms --step-at 30s --step-delay 20ms /srv/data /mnt/t

  # a server taking 4 data requests at once, 10 ms each; more wait
  ioscale-testfs --slots 4 --service 10ms /srv/data /mnt/t

  # EIO after 1 MiB of data; writes find the disk full after 2 MiB
  ioscale-testfs --eio-after-bytes 1m /srv/data /mnt/t
  ioscale-testfs --enospc-after-bytes 2m /srv/data /mnt/t

  # reads and writes served at most half, fsync fails, for file.00000001 only
  ioscale-testfs --short-reads --short-writes --fsync-fail \\
      --faults-path-substr file.00000001 /srv/data /mnt/t

  # a gateway without rename: every rename fails with ENOSYS
  ioscale-testfs --no-rename /srv/data /mnt/t

  # stop: Ctrl-C, kill -TERM <pid>, or
  fusermount3 -u /mnt/t

Durations: 0, 500us, 2ms, 1.5s. Sizes and rates: 512, 64k, 1m, 2g, 1MiB,
1MB (10^6), 100m/s. Delays are minimum service times: a request completes no
earlier than its delay after it arrived, and no earlier than the bandwidth cap
allows; concurrent requests wait in parallel. Faults count only requests on
files the --faults-path-substr filter selects (all by default).";

/// On or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

/// A pass-through FUSE file system that injects latency, a bandwidth cap and
/// faults: a test double for storage with known answers.
#[derive(Debug, Parser)]
#[command(name = "ioscale-testfs", version, about, after_help = EXAMPLES)]
struct Args {
    /// Directory whose contents are served.
    source: PathBuf,

    /// Where to mount (an existing directory outside SOURCE).
    mountpoint: PathBuf,

    /// Minimum service time of each read or write request.
    #[arg(long, value_name = "DUR", default_value = "0", value_parser = parse_duration)]
    delay: Duration,

    /// Spread of --delay: each data request's delay is drawn uniformly from
    /// DELAY ± DUR (never below 0), seeded by --seed.
    #[arg(long, value_name = "DUR", default_value = "0", value_parser = parse_duration)]
    delay_jitter: Duration,

    /// Seed of the --delay-jitter draws (the same seed gives the same delays).
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,

    /// Added to each metadata request (lookup, getattr, setattr, open, create,
    /// flush, mkdir, unlink, rename, readdir, statfs, xattr, access, ...).
    #[arg(long, value_name = "DUR", default_value = "0", value_parser = parse_duration)]
    meta_delay: Duration,

    /// Apply --meta-delay only to lookups, creates, mknods, mkdirs and
    /// unlinks of names whose path inside the mount contains S (one slow
    /// directory among fast ones).
    #[arg(long, value_name = "S")]
    meta_delay_path_substr: Option<String>,

    /// Added to each fsync / fdatasync.
    #[arg(long, value_name = "DUR", default_value = "0", value_parser = parse_duration)]
    fsync_delay: Duration,

    /// Aggregate cap on data bytes per second across all requests (token bucket, e.g. 100m).
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    bw: Option<u64>,

    /// Burst credits: a balance of SIZE bytes, full at mount, that data
    /// requests spend; once spent, data is served at --baseline (needs it).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, requires = "baseline")]
    burst_credit: Option<u64>,

    /// The rate burst credits refill at, and the rate once they are spent.
    #[arg(long, value_name = "RATE", value_parser = parse_rate, requires = "burst_credit")]
    baseline: Option<u64>,

    /// From this long after the first data request, each data request's
    /// delay is --step-delay instead of --delay (needs it).
    #[arg(long, value_name = "DUR", value_parser = parse_duration, requires = "step_delay")]
    step_at: Option<Duration>,

    /// The delay of each data request after --step-at.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, requires = "step_at")]
    step_delay: Option<Duration>,

    /// A server with K slots: at most K data requests are served at once,
    /// each for --service; the others wait for a slot (needs --service).
    #[arg(long, value_name = "K", requires = "service",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    slots: Option<u32>,

    /// The service time of a data request in one of the --slots.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, requires = "slots")]
    service: Option<Duration>,

    /// Every DUR from the first data request, print one line to stderr:
    /// the data served since the line before (bytes, requests, mean time
    /// in the file system), the credit balance, requests in the server.
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    interval_log: Option<Duration>,

    /// Data requests fail with EIO once this many bytes were served (whole requests).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    eio_after_bytes: Option<u64>,

    /// Data requests fail with EIO once this many data requests were served.
    #[arg(long, value_name = "N")]
    eio_after_ops: Option<u64>,

    /// Writes fail with ENOSPC once this many bytes were written in all (the
    /// write that crosses the limit is accepted up to it, as a full disk does).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    enospc_after_bytes: Option<u64>,

    /// Serve at most half of each write (at least 1 byte): the client must loop.
    #[arg(long)]
    short_writes: bool,

    /// Serve at most half of each read (at least 1 byte): the client must loop.
    /// Needs --direct-io on (the page cache takes a short read for end of file).
    #[arg(long)]
    short_reads: bool,

    /// fsync and fdatasync return EIO.
    #[arg(long)]
    fsync_fail: bool,

    /// Inject faults only on files whose path inside the mount contains S.
    #[arg(long, value_name = "S")]
    faults_path_substr: Option<String>,

    /// Service threads: requests served at once (each sleeps its delay on its thread).
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: u32,

    /// Open files with FOPEN_DIRECT_IO, so every read and write reaches the
    /// daemon (and pays the delay) instead of the kernel page cache.
    #[arg(long, value_enum, value_name = "ON|OFF", default_value = "on")]
    direct_io: OnOff,

    /// With --direct-io off: open files with FOPEN_KEEP_CACHE, so the
    /// kernel keeps a file's cached pages across opens and a read after a
    /// write is served from the page cache, never reaching the daemon.
    #[arg(long)]
    keep_cache: bool,

    /// Largest write request to negotiate; the kernel caps it (1 MiB on
    /// current Linux, 128 KiB on kernels without FUSE_MAX_PAGES).
    #[arg(long, value_name = "SIZE", default_value = "1m", value_parser = parse_size)]
    max_write: u64,

    /// How long the kernel may cache attributes and names.
    #[arg(long, value_name = "DUR", default_value = "1s", value_parser = parse_duration)]
    attr_ttl: Duration,

    /// Mount directly instead of through fusermount3's auto_unmount (which
    /// removes the mount even if this process is killed with SIGKILL).
    #[arg(long)]
    no_auto_unmount: bool,

    /// Print one line per read or write request to stderr (offset, asked, served).
    #[arg(long)]
    trace: bool,

    /// Refuse every rename with ENOSYS, as some FUSE and object-store
    /// gateways do (a file can then only be written in place).
    #[arg(long)]
    no_rename: bool,

    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
}

fn on_path(bin: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(bin).is_file()))
        .unwrap_or(false)
}

fn config(threads: u32, auto_unmount: bool) -> Config {
    let mut c = Config::default();
    c.mount_options = vec![
        MountOption::FSName("ioscale-testfs".into()),
        MountOption::Subtype("ioscale-testfs".into()),
        MountOption::RW,
        MountOption::NoAtime,
    ];
    if auto_unmount {
        c.mount_options.push(MountOption::AutoUnmount);
    }
    // allow_root: root and the owner (the same user here) may use the
    // mount; auto_unmount needs something other than the default owner-only.
    c.acl = SessionACL::RootAndOwner;
    c.n_threads = Some(threads as usize);
    c.clone_fd = true;
    c
}

fn umount(mp: &Path, flags: libc::c_int) -> std::io::Result<()> {
    let c = std::ffi::CString::new(mp.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn main() -> ExitCode {
    let a = Args::parse();
    let fail = |msg: String| {
        eprintln!("ioscale-testfs: {msg}");
        ExitCode::from(2)
    };
    let (source, mp, max_write) = match checked_paths(&a) {
        Ok(x) => x,
        Err(msg) => return fail(msg),
    };

    // Modes come from the client with its umask already applied.
    // SAFETY: umask has no failure mode.
    unsafe { libc::umask(0) };

    let inj = Arc::new(injector(&a));
    let make_fs = || {
        PassFs::new(
            source.clone(),
            FsOptions {
                direct_io: a.direct_io == OnOff::On,
                keep_cache: a.keep_cache,
                attr_ttl: a.attr_ttl,
                max_write,
                trace: a.trace,
                no_rename: a.no_rename,
            },
            inj.clone(),
        )
    };

    let auto = !a.no_auto_unmount && on_path("fusermount3");
    let session = match Session::new(make_fs(), &mp, &config(a.threads, auto)) {
        Ok(s) => Ok(s),
        Err(e) if auto => {
            eprintln!(
                "ioscale-testfs: mounting through fusermount3 (auto_unmount) failed: {e}; \
                 mounting directly"
            );
            Session::new(make_fs(), &mp, &config(a.threads, false))
        }
        Err(e) => Err(e),
    };
    let mut session = match session {
        Ok(s) => s,
        Err(e) => {
            return fail(format!(
                "cannot mount at {}: {e} (is /dev/fuse there, and are you root or is \
                 fusermount3 installed?)",
                mp.display()
            ))
        }
    };
    if let Err(e) = unmount_on_signals(session.unmount_callable(), mp.clone(), a.quiet) {
        return fail(format!("cannot install signal handlers: {e}"));
    }
    let quiet = a.quiet;
    if !quiet {
        eprintln!(
            "ioscale-testfs: serving {} at {} (pid {}, {} threads, direct_io {}, {})",
            source.display(),
            mp.display(),
            std::process::id(),
            a.threads,
            if a.direct_io == OnOff::On {
                "on"
            } else {
                "off"
            },
            if auto { "auto_unmount" } else { "direct mount" }
        );
    }
    if let Some(every) = a.interval_log {
        if let Err(e) = interval_log(inj.clone(), every) {
            return fail(format!("cannot start the interval log: {e}"));
        }
    }
    let r = session.run();
    if !quiet {
        // Before the summary, which stays the last line.
        eprintln!(
            "ioscale-testfs: requests by opcode: {}",
            inj.counters.by_opcode()
        );
        eprintln!("ioscale-testfs: unmounted; {}", inj.summary());
    }
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ioscale-testfs: session ended with an error: {e}");
            ExitCode::from(1)
        }
    }
}

/// SOURCE and MOUNTPOINT as canonical directories (the mount point not
/// inside the source), and `--max-write` in range.
fn checked_paths(a: &Args) -> Result<(PathBuf, PathBuf, u32), String> {
    if a.keep_cache && a.direct_io == OnOff::On {
        return Err(
            "--keep-cache needs --direct-io off: with direct I/O no page is cached to keep".into(),
        );
    }
    if a.short_reads && a.direct_io == OnOff::Off {
        return Err(
            "--short-reads needs --direct-io on: through the page cache the kernel takes a short \
             read for the end of the file"
                .into(),
        );
    }
    if let Some(k) = a.slots.filter(|&k| k > a.threads) {
        return Err(format!(
            "--slots {k} needs at least {k} service threads (--threads {}): a request waiting \
             for a slot holds its thread",
            a.threads
        ));
    }
    if a.service.is_some_and(|d| d.is_zero()) {
        return Err("--service: a slot's service time must be above 0".into());
    }
    if a.interval_log.is_some_and(|d| d < Duration::from_millis(1)) {
        return Err("--interval-log: use 1ms or more".into());
    }
    let source = match a.source.canonicalize() {
        Ok(p) if p.is_dir() => p,
        Ok(p) => return Err(format!("SOURCE {} is not a directory", p.display())),
        Err(e) => return Err(format!("SOURCE {}: {e}", a.source.display())),
    };
    let mp = match a.mountpoint.canonicalize() {
        Ok(p) if p.is_dir() => p,
        Ok(p) => return Err(format!("MOUNTPOINT {} is not a directory", p.display())),
        Err(e) => return Err(format!("MOUNTPOINT {}: {e}", a.mountpoint.display())),
    };
    if mp.starts_with(&source) {
        return Err(format!(
            "MOUNTPOINT {} is inside SOURCE {}: the file system would serve itself",
            mp.display(),
            source.display()
        ));
    }
    let max_write = match u32::try_from(a.max_write) {
        Ok(v) if v >= 4096 => v,
        _ => return Err("--max-write: use a size from 4k to 16m".into()),
    };
    Ok((source, mp, max_write))
}

/// The faults and timing the flags ask for.
fn injector(a: &Args) -> Injector {
    Injector::new(
        Faults {
            eio_after_bytes: a.eio_after_bytes,
            eio_after_ops: a.eio_after_ops,
            enospc_after_bytes: a.enospc_after_bytes,
            short_writes: a.short_writes,
            short_reads: a.short_reads,
            fsync_fail: a.fsync_fail,
            path_substr: a.faults_path_substr.clone(),
        },
        Timing {
            delay: a.delay,
            meta_delay: a.meta_delay,
            meta_delay_path_substr: a.meta_delay_path_substr.clone(),
            fsync_delay: a.fsync_delay,
            bw: a.bw,
            delay_jitter: a.delay_jitter,
            seed: a.seed,
            credit: a.burst_credit.zip(a.baseline),
            step: a
                .step_at
                .zip(a.step_delay)
                .map(|(after, to)| Step { after, to }),
            slots: a.slots.zip(a.service),
        },
    )
}

/// Prints one line of what was served every `every`, from the first data
/// request on, from a thread of its own (it ends with the process).
fn interval_log(inj: Arc<Injector>, every: Duration) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("interval-log".into())
        .spawn(move || {
            let origin = loop {
                if let Some(o) = inj.origin.get() {
                    break o;
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            let mut prev = (0, 0, 0);
            let mut k = 0u32;
            loop {
                k = k.saturating_add(1);
                // Absolute ticks, so the lines do not drift.
                testfs::inject::sleep_until(origin + every.saturating_mul(k));
                if let Some(line) = inj.interval_line(std::time::Instant::now(), &mut prev) {
                    eprintln!("ioscale-testfs: {line}");
                }
            }
        })?;
    Ok(())
}

/// Unmounts `mp` on SIGTERM, SIGINT or SIGHUP, from a thread of its own.
fn unmount_on_signals(
    mut unmounter: fuser::SessionUnmounter,
    mp: PathBuf,
    quiet: bool,
) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                if !quiet {
                    eprintln!("ioscale-testfs: signal {sig}, unmounting");
                }
                // As root, unmount directly: dropping fusermount3's
                // auto_unmount socket while this process lives was seen to
                // leave the mount in place (fuse3 3.14).
                // SAFETY: geteuid has no failure mode.
                if unsafe { libc::geteuid() } == 0 {
                    if let Err(e) = umount(&mp, 0) {
                        eprintln!("ioscale-testfs: unmount failed ({e}); detaching the mount");
                        let _ = umount(&mp, libc::MNT_DETACH);
                    }
                } else if let Err(e) = unmounter.unmount() {
                    eprintln!("ioscale-testfs: unmount failed ({e}); detaching the mount");
                    let _ = umount(&mp, libc::MNT_DETACH);
                }
            }
        })?;
    Ok(())
}
