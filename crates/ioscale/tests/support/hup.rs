//! Helpers of the hang-up tests (hangup.rs, signals_random.rs): every
//! command that runs a workload, as a command line on a target and an
//! output directory with the record it asks for; a child frozen at a test
//! hook (`IOSCALE_TEST_FREEZE`) and released; and the checks every ending
//! by a signal must pass (its code, its record, nothing left behind).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::rel::*;

/// How long a command's workload runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Length {
    /// A fraction of a second: it runs to its end.
    Short,
    /// Many short phases (or one long one) for many seconds on an idle
    /// machine: a signal sent within a few seconds of the start lands
    /// inside it, on a loaded machine too (it only runs longer there).
    Long,
}

/// One command that runs a workload.
pub struct Case {
    /// The command's name (`run`, `ior`, …).
    pub name: &'static str,
    /// Its words after `ioscale`.
    pub args: Vec<String>,
    /// The record it was asked to write, if any.
    pub record: Option<PathBuf>,
    /// The record is an ioscale run or sweep record (`report` reads it);
    /// otherwise it is the tool's own JSON document.
    pub native: bool,
    /// What it leaves by design (smallfile keeps the tree it made, as
    /// smallfile does): `ioscale clean TARGET` removes it.
    pub keeps: bool,
}

/// The commands that run a workload.
pub const COMMANDS: [&str; 9] = [
    "run",
    "meta",
    "sweep",
    "ior",
    "mdtest",
    "dd",
    "smallfile",
    "fio",
    "io500",
];

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

/// Command `name` on the target `t`, its record and other outputs in `o`.
pub fn case(name: &'static str, t: &Path, o: &Path, len: Length) -> Case {
    let long = len == Length::Long;
    let j = o.join(format!("{name}.json"));
    let (ts, js) = (s(t).to_string(), s(&j).to_string());
    let reps = if long { "400" } else { "1" };
    let (args, native, keeps) = match name {
        "run" => (
            words(&[
                "run",
                "--op",
                "write,read",
                "--threads",
                "2",
                "--size",
                "4m",
                "--xfer",
                "64k",
                "--reps",
                reps,
                "--json",
                &js,
                "-q",
                &ts,
            ]),
            true,
            false,
        ),
        "meta" => (
            words(&[
                "meta",
                "--ops",
                "create,stat,delete",
                "--threads",
                "2",
                "--files",
                "300",
                "--file-size",
                "0",
                "--reps",
                reps,
                "--json",
                &js,
                "-q",
                &ts,
            ]),
            true,
            false,
        ),
        "sweep" => (
            words(&[
                "sweep",
                "--threads",
                if long { "1,2,3,4" } else { "1,2" },
                "--reps",
                if long { "30" } else { "1" },
                "--json",
                &js,
                "-q",
                "--",
                "run",
                "--op",
                "write,read",
                "--size",
                "2m",
                "--xfer",
                "64k",
                &ts,
            ]),
            true,
            false,
        ),
        "ior" => (
            words(&[
                "ior",
                "-w",
                "-r",
                "-F",
                "-N",
                "2",
                "-b",
                "4m",
                "-t",
                "64k",
                "-i",
                reps,
                "-o",
                s(&t.join("hup.ior")),
                "-O",
                "summaryFormat=JSON",
                "-O",
                &format!("summaryFile={js}"),
            ]),
            false,
            false,
        ),
        "mdtest" => (
            words(&[
                "mdtest",
                "--tasks",
                "2",
                "-n",
                "300",
                "-F",
                "-i",
                reps,
                "-d",
                s(&t.join("md")),
            ]),
            false,
            false,
        ),
        "dd" => (
            words(&[
                "dd",
                "--jobs",
                "2",
                "--rm",
                "if=/dev/zero",
                &format!("of={ts}/dd-{{}}"),
                "bs=4k",
                if long { "count=1000000" } else { "count=64" },
                "oflag=sync",
            ]),
            false,
            false,
        ),
        "smallfile" => (
            words(&[
                "smallfile",
                "--top",
                &ts,
                "--threads",
                "2",
                "--files",
                if long { "2000000" } else { "200" },
                "--file-size",
                "0",
                "--operation",
                "create",
                "--output-json",
                &js,
            ]),
            false,
            true,
        ),
        "fio" => (
            words(&[
                "fio",
                "--name=j",
                &format!("--directory={ts}"),
                "--rw=write",
                "--bs=64k",
                "--size=4m",
                "--numjobs=2",
                if long { "--loops=2000" } else { "--loops=1" },
                "--unlink=1",
                "--output-format=json",
                &format!("--output={js}"),
            ]),
            false,
            false,
        ),
        "io500" => {
            let cfg = io500_ini(t, o, long);
            (
                words(&[
                    "io500",
                    "--stonewall",
                    if long { "1s" } else { "30s" },
                    "--tasks",
                    "2",
                    "--json",
                    &js,
                    s(&cfg),
                ]),
                false,
                false,
            )
        }
        other => panic!("no case for {other}"),
    };
    Case {
        name,
        args,
        record: (name != "mdtest" && name != "dd").then_some(j),
        native,
        keeps,
    }
}

/// An io500 config in `o` whose data directory is `t/io500` and whose
/// results go to `o/res`: tiny phases, or (long) phases a stonewall ends.
fn io500_ini(t: &Path, o: &Path, long: bool) -> PathBuf {
    let p = o.join("io500.ini");
    let (easy, hard) = if long {
        ("n = 100000000", "n = 100000000")
    } else {
        ("n = 200", "n = 100")
    };
    std::fs::write(
        &p,
        format!(
            "[global]\ndatadir = {}\nresultdir = {}\ntimestamp-datadir = FALSE\n\
             timestamp-resultdir = FALSE\n\n[ior-easy]\nAPI = POSIX\ntransferSize = 64k\n\
             blockSize = {}\n\n[ior-hard]\nsegmentCount = {}\n\n[mdtest-easy]\n{easy}\n\n\
             [mdtest-hard]\n{hard}\n",
            s(&t.join("io500")),
            s(&o.join("res")),
            if long { "64m" } else { "1m" },
            if long { 2000 } else { 20 },
        ),
    )
    .unwrap();
    p
}

/// Starts `case`, frozen (SIGSTOP) when it reaches the test hook `point`.
pub fn spawn_frozen(case: &Case, point: &str) -> Child {
    let a: Vec<&str> = case.args.iter().map(String::as_str).collect();
    let freeze = format!("0:{point}");
    spawn_env(&a, &[("IOSCALE_TEST_FREEZE", &freeze)])
}

/// The state letter of process `pid` (`T` stopped), from /proc.
fn state(pid: u32) -> Option<char> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    st.rsplit_once(") ")?.1.chars().next()
}

/// Waits until the child stopped itself at its hook (at most 120 s: a
/// limit on a hang, not on speed). Fails the test if it exits first.
pub fn wait_stopped(child: &mut Child, what: &str) {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            panic!("{what}: ioscale exited ({st}) before it reached its test hook");
        }
        if state(child.id()) == Some('T') {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "{what}: not at its hook after 120 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Lets a frozen child go on.
pub fn resume(child: &Child) {
    signal(child, libc::SIGCONT);
}

/// The checks after `case` ended by a signal with `out`: exit `code`, no
/// panic, the record it asked for written and valid, and the target `t`
/// as it was before the run (`before`), once what the command keeps by
/// design is removed by `ioscale clean`.
pub fn check_ending(case: &Case, out: &Output, code: i32, t: &Path, before: &Tree, ctx: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{ctx}: exit {:?}\n{}",
        out.status,
        stderr(out)
    );
    if let Some(r) = &case.record {
        let text = std::fs::read(r)
            .unwrap_or_else(|e| panic!("{ctx}: no record {}: {e}\n{}", r.display(), stderr(out)));
        let v: serde_json::Value = serde_json::from_slice(&text)
            .unwrap_or_else(|e| panic!("{ctx}: {} is not JSON: {e}", r.display()));
        assert!(v.is_object(), "{ctx}: {v}");
        if case.native {
            let rep = run(&["report", "-q", s(r)]);
            assert_code(&rep, 0);
        }
    }
    if case.keeps && names(t) != before.keys().cloned().collect::<Vec<_>>() {
        let c = run(&["clean", s(t)]);
        assert_code(&c, 0);
    }
    assert_intact(t, before, ctx);
}

/// A child whose standard input, output and error are a pseudo-terminal
/// that is its controlling terminal (it leads a session of its own, as a
/// login shell's job does), and the terminal's master side, which the
/// test holds as the SSH server would.
pub struct OnTerminal {
    pub child: Child,
    master: Option<std::os::fd::OwnedFd>,
}

impl OnTerminal {
    /// Starts ioscale with `args` on a new terminal; with `ignore_hup`
    /// SIGHUP is ignored from the start, as `nohup` leaves it.
    pub fn spawn(args: &[String], ignore_hup: bool) -> OnTerminal {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        use std::os::unix::process::CommandExt;
        let (mut m, mut sl) = (-1, -1);
        // SAFETY: openpty fills the two descriptors; null name, termios
        // and window size are allowed.
        let rc = unsafe {
            libc::openpty(
                &mut m,
                &mut sl,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty");
        // SAFETY: both descriptors were just opened and are ours alone.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(sl)) };
        // SAFETY: fcntl on our own descriptors. The master side stays in
        // this process alone (closing it must hang the terminal up).
        unsafe {
            let fl = libc::fcntl(master.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(master.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
            libc::fcntl(master.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
        }
        let mut cmd = std::process::Command::new(ioscale_path());
        cmd.args(args)
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if ignore_hup {
                    libc::signal(libc::SIGHUP, libc::SIG_IGN);
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("starting ioscale on a terminal");
        OnTerminal {
            child,
            master: Some(master),
        }
    }

    /// Reads what the child wrote so far (so it never blocks on a full
    /// terminal); returns it.
    pub fn drain(&mut self) -> Vec<u8> {
        use std::os::fd::AsRawFd;
        let mut got = Vec::new();
        let Some(m) = &self.master else {
            return got;
        };
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: reads into a buffer of its length from our descriptor.
            let n = unsafe { libc::read(m.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return got;
            }
            got.extend_from_slice(&buf[..n as usize]);
        }
    }

    /// Waits, reading the terminal, until `ready()` holds (at most 60 s).
    pub fn wait_until(&mut self, what: &str, ready: impl Fn() -> bool) {
        let t0 = Instant::now();
        let mut said = Vec::new();
        while !ready() {
            said.extend(self.drain());
            if let Some(st) = self.child.try_wait().unwrap() {
                said.extend(self.drain());
                panic!(
                    "ioscale ended ({st}) before {what}:\n{}",
                    String::from_utf8_lossy(&said)
                );
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "no {what} after 60 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Hangs the terminal up: the master side closes, as when the SSH
    /// connection drops. The kernel sends SIGHUP to the session's leader
    /// (the child) and every later write to the terminal fails with EIO.
    pub fn hang_up(&mut self) {
        self.drain();
        self.master = None;
    }

    /// Waits for the child to exit (at most 120 s) and returns its status.
    pub fn finish(mut self) -> std::process::ExitStatus {
        let t0 = Instant::now();
        loop {
            self.drain();
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            if t0.elapsed() > Duration::from_secs(120) {
                let _ = self.child.kill();
                panic!("ioscale did not exit within 120 s of the hang-up");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
