//! The libaio engine (Linux native AIO) against fio 3.33's: the same job
//! on the same ext4 loop image under strace, the calls counted by kind —
//! one `io_setup` of the job's depth, one `io_submit` per request (fio's
//! `iodepth_batch_submit=1`), one `io_getevents` per completion (fio's
//! `iodepth_batch_complete_min=1`, max equal; fio's last wait takes the
//! whole tail at once, so it makes up to depth − 1 fewer), the same bytes
//! each way in the iocbs and no pread/pwrite of the job's block size.
//! Then the native engine (`run --engine libaio`): data written at depth
//! and read back verified with O_DIRECT on ext4, and buffered on tmpfs
//! with the note that the kernel does buffered AIO synchronously.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// The kernel's AIO budget (`/proc/sys/fs/aio-max-nr`) is one for the
/// whole machine: the test that exhausts it holds this exclusively, the
/// tests that need a context of their own hold it shared, so they never
/// meet an exhausted budget (CI failed on exactly that once).
static AIO_BUDGET: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs fio (`real`) or `ioscale fio` with `args` in `dir` under strace;
/// returns the trace. `-y`: descriptors shown with their paths, so the
/// job's own file's calls can be told from others (ioscale's O_DIRECT
/// probe).
fn traced(real: bool, args: &[&str], dir: &Path) -> String {
    let flags = [
        "-y",
        "-e",
        "trace=io_setup,io_submit,io_getevents,io_destroy,pread64,pwrite64",
    ];
    let mut args = args.to_vec();
    args.push("--output=/dev/null");
    common::strace::fio_traced(real, &flags, &args, dir).0
}

/// What a trace shows of one job.
#[derive(Debug, PartialEq, Eq)]
struct Calls {
    /// The depth of each io_setup.
    setups: Vec<u64>,
    destroys: usize,
    submits: usize,
    getevents: usize,
    /// Bytes in the iocbs: reads, writes.
    bytes: [u64; 2],
    /// pread64/pwrite64 calls of the job's block size on its file `d/f`.
    sync_transfers: usize,
}

fn calls(trace: &str, bs: u64) -> Calls {
    let starts = |name: &str| {
        let pat = format!("{name}(");
        trace.lines().filter(move |l| l.contains(&pat))
    };
    let mut bytes = [0u64; 2];
    for l in starts("io_submit") {
        for cb in l.split("aio_lio_opcode=").skip(1) {
            let n: u64 = cb
                .split("aio_nbytes=")
                .nth(1)
                .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|d| d.parse().ok())
                .unwrap_or_else(|| panic!("no aio_nbytes in {l}"));
            bytes[usize::from(cb.starts_with("IOCB_CMD_PWRITE"))] += n;
        }
    }
    let size = format!(", {bs}, ");
    Calls {
        setups: starts("io_setup")
            .map(|l| {
                let a = l.split("io_setup(").nth(1).unwrap();
                a.split(',').next().unwrap().trim().parse().unwrap()
            })
            .collect(),
        destroys: starts("io_destroy").count(),
        submits: starts("io_submit").count(),
        getevents: starts("io_getevents").count(),
        bytes,
        sync_transfers: starts("pread64")
            .chain(starts("pwrite64"))
            .filter(|l| l.contains(&size) && l.contains("/d/f>"))
            .count(),
    }
}

#[test]
fn libaio_calls_and_bytes_are_fios() {
    let _budget = AIO_BUDGET.read().unwrap_or_else(|e| e.into_inner());
    if !have("fio") || !have("strace") {
        eprintln!("SKIPPED: fio or strace not installed");
        return;
    }
    let Some(m) = loop_ext4("128M") else { return };
    let dir = m.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    // (options, depth, whether each direction's bytes are fixed: a mixed
    // job's split is drawn, differently by each tool).
    let jobs: &[(&[&str], u64, bool)] = &[
        (&["--rw=randread", "--direct=1", "--iodepth=8"], 8, true),
        (&["--rw=read", "--direct=1", "--iodepth=4"], 4, true),
        (&["--rw=randwrite", "--direct=1", "--iodepth=16"], 16, true),
        (&["--rw=write", "--direct=0", "--iodepth=4"], 4, true),
        (&["--rw=randrw", "--direct=1", "--iodepth=8"], 8, false),
    ];
    let bs = 16384u64;
    let size = 4u64 << 20;
    for (extra, depth, split_fixed) in jobs {
        let mut args = vec![
            "--name=j",
            "--ioengine=libaio",
            "--bs=16k",
            "--size=4m",
            "--filename=f",
        ];
        args.extend_from_slice(extra);
        let want = calls(&traced(true, &args, &dir), bs);
        std::fs::remove_file(dir.join("f")).unwrap();
        let got = calls(&traced(false, &args, &dir), bs);
        std::fs::remove_file(dir.join("f")).unwrap();
        let n = size / bs;
        assert_eq!(want.submits as u64, n, "{extra:?}: fio's own count");
        assert_eq!(got.setups, vec![*depth], "{extra:?}: {got:?}");
        assert_eq!(got.setups, want.setups, "{extra:?}");
        assert_eq!(got.destroys, want.destroys, "{extra:?}");
        assert_eq!(got.submits, want.submits, "{extra:?}");
        assert!(
            got.getevents >= want.getevents && got.getevents as u64 <= n,
            "{extra:?}: io_getevents {} (fio {}) for {n} requests",
            got.getevents,
            want.getevents
        );
        assert_eq!(got.bytes[0] + got.bytes[1], size, "{extra:?}: {got:?}");
        if *split_fixed {
            assert_eq!(got.bytes, want.bytes, "{extra:?}");
        }
        assert_eq!(
            (got.sync_transfers, want.sync_transfers),
            (0, 0),
            "{extra:?}"
        );
    }
}

#[test]
fn native_libaio_writes_and_reads_back_verified() {
    let _budget = AIO_BUDGET.read().unwrap_or_else(|e| e.into_inner());
    let Some(m) = loop_ext4("64M") else { return };
    let o = scratch();
    let j = o.path().join("r.json");
    let out = run(&[
        "run",
        "--engine",
        "libaio",
        "--iodepth",
        "8",
        "--direct",
        "--op",
        "randwrite,randread",
        "--threads",
        "2",
        "--size",
        "2m",
        "--xfer",
        "8k",
        "--verify",
        "--json",
        s(&j),
        s(m.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    check_phase(&phases(&v)[0], "randwrite", 2, 4 << 20, 8192);
    check_verified(&phases(&v)[1], 4 << 20);
    assert!(
        !stdout(&out).contains("without O_DIRECT"),
        "{}",
        stdout(&out)
    );

    // Buffered, on tmpfs: it runs, verified, and says the depth is moot.
    let Some(t) = tmpfs("size=64m") else { return };
    let out = run(&[
        "run",
        "--engine",
        "libaio",
        "--op",
        "write,read",
        "--size",
        "1m",
        "--xfer",
        "4k",
        "--verify",
        "--json",
        s(&j),
        s(t.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    check_phase(&phases(&v)[0], "write", 1, 1 << 20, 4096);
    check_verified(&phases(&v)[1], 1 << 20);
    assert!(
        stdout(&out).contains("warning: libaio without O_DIRECT"),
        "{}",
        stdout(&out)
    );
    assert_empty(t.path());
}

#[test]
fn libaio_contexts_beyond_the_system_limit_fail_naming_io_setup() {
    let _budget = AIO_BUDGET.write().unwrap_or_else(|e| e.into_inner());
    // 32 contexts of 4096 requests are more than the kernel's default
    // /proc/sys/fs/aio-max-nr (65536): the workers that
    // get none fail naming the call and the limit; nothing is left.
    let limit: u64 = std::fs::read_to_string("/proc/sys/fs/aio-max-nr")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    if limit == 0 || limit > 32 * 4096 {
        eprintln!("SKIPPED: aio-max-nr is {limit}, large enough for this run");
        return;
    }
    let Some(t) = tmpfs("size=64m") else { return };
    let out = run(&[
        "run",
        "--engine",
        "libaio",
        "--iodepth",
        "4096",
        "--threads",
        "32",
        "--size",
        "64k",
        "--xfer",
        "4k",
        s(t.path()),
    ]);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains(": io_setup ") && err.contains("aio-max-nr"),
        "{err}"
    );
    assert_empty(t.path());
}
