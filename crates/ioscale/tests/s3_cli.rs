//! `ioscale run s3://BUCKET/PREFIX` and `ioscale clean s3://…` against a
//! real S3 server (s3s-fs on loopback): the bytes written are the bytes
//! the server stores, --verify reads them back, a foreign object in the
//! bucket survives run, clean and Ctrl-C, and wrong credentials or a
//! missing bucket end the run with exit 2 and one line before anything is
//! made.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use objstore::testing::{skip_without_server, Server};
use objstore::{Client, RetryPolicy};

const BUCKET: &str = "bkt";

fn start() -> Option<Server> {
    if skip_without_server() {
        return None;
    }
    Some(Server::start(&[BUCKET]).expect("s3s-fs starts"))
}

/// The binary with the server's endpoint and keys in its environment
/// (and nothing of the user's AWS files).
fn ioscale(server: &Server, secret: Option<&str>) -> Command {
    let st = server.settings();
    let mut c = Command::new(env!("CARGO_BIN_EXE_ioscale"));
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", server.root())
        .env("AWS_ENDPOINT_URL", server.endpoint())
        .env("AWS_ACCESS_KEY_ID", &st.credentials.key)
        .env(
            "AWS_SECRET_ACCESS_KEY",
            secret.unwrap_or(&st.credentials.secret),
        );
    c
}

fn run(cmd: &mut Command, args: &[&str]) -> Output {
    cmd.args(args).output().expect("ioscale runs")
}

/// Puts a foreign object (not ioscale's) into the bucket.
fn put_foreign(server: &Server, key: &str, body: &[u8]) {
    let c = Client::new(&server.settings(), BUCKET, RetryPolicy::default()).unwrap();
    c.connect(7).put(key, body).unwrap();
}

/// Every object file the server holds below `prefix` (s3s-fs keeps one
/// file per object; it may leave empty directories after a DELETE).
fn stored(server: &Server, prefix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![server.object_path(BUCKET, prefix)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn foreign_intact(server: &Server) {
    let p = server.object_path(BUCKET, "p/theirs");
    assert_eq!(std::fs::read(p).unwrap(), b"not ioscale's");
    let p = server.object_path(BUCKET, "p/ioscale.d-lookalike");
    assert_eq!(std::fs::read(p).unwrap(), b"also not");
}

const RUN: &[&str] = &[
    "run",
    "--op",
    "write,read",
    "--size",
    "1m",
    "--xfer",
    "1m",
    "--threads",
    "4",
    "--verify",
];

#[test]
fn bytes_written_are_the_bytes_stored_and_verified_and_clean_leaves_the_foreign() {
    let Some(server) = start() else { return };
    put_foreign(&server, "p/theirs", b"not ioscale's");
    put_foreign(&server, "p/ioscale.d-lookalike", b"also not");
    let json = server.root().join("r.json");
    let mut args = RUN.to_vec();
    args.extend(["--keep", "--json", json.to_str().unwrap(), "s3://bkt/p"]);
    let out = run(&mut ioscale(&server, None), &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("checked 4 MiB, 0 bad bytes"), "{text}");
    assert!(!text.contains("page cache"), "no cache on a store: {text}");
    // Four objects of 1 MiB each, with the bytes the record counts.
    let files: Vec<_> = stored(&server, "p/ioscale.d")
        .into_iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("file.")
        })
        .collect();
    assert_eq!(files.len(), 4, "{files:?}");
    for f in &files {
        assert_eq!(std::fs::metadata(f).unwrap().len(), 1 << 20);
    }
    let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let text = rec.to_string();
    assert!(text.contains("4194304"), "the record counts 4 MiB written");
    foreign_intact(&server);
    // clean removes the kept set, and only it.
    let out = run(&mut ioscale(&server, None), &["clean", "s3://bkt/p"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stored(&server, "p/ioscale.d").is_empty());
    foreign_intact(&server);
    // A run without --keep leaves no object of its own.
    let mut args = RUN.to_vec();
    args.push("s3://bkt/p");
    let out = run(&mut ioscale(&server, None), &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stored(&server, "p/ioscale.d").is_empty());
    foreign_intact(&server);
}

/// Exit 2, one line naming the cause, nothing made in the bucket.
fn refused_before_anything(server: &Server, out: &Output, cause: &str) {
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(cause), "{err}");
    assert!(stored(server, "p/ioscale.d").is_empty());
}

#[test]
fn wrong_secret_and_missing_bucket_exit_2_with_one_line_before_anything_runs() {
    let Some(server) = start() else { return };
    let mut args = RUN.to_vec();
    args.push("s3://bkt/p");
    let out = run(&mut ioscale(&server, Some("wrong")), &args);
    refused_before_anything(&server, &out, "the credentials were refused");
    let mut args = RUN.to_vec();
    args.push("s3://missing/p");
    let out = run(&mut ioscale(&server, None), &args);
    refused_before_anything(&server, &out, "the bucket does not exist");
    // Parts under 5 MiB: refused naming the flag, before any request.
    let out = run(
        &mut ioscale(&server, None),
        &[
            "run",
            "--op",
            "write",
            "--size",
            "8m",
            "--xfer",
            "1m",
            "s3://bkt/p",
        ],
    );
    refused_before_anything(&server, &out, "--xfer 1048576: the s3 backend");
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(120), "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_keeps_the_results_removes_its_objects_and_leaves_the_foreign() {
    let Some(server) = start() else { return };
    put_foreign(&server, "p/theirs", b"not ioscale's");
    put_foreign(&server, "p/ioscale.d-lookalike", b"also not");
    let json = server.root().join("i.json");
    let child = ioscale(&server, None)
        .args([
            "run",
            "--op",
            "write,read",
            "--size",
            "64k",
            "--xfer",
            "64k",
            "--threads",
            "2",
            "--reps",
            "100000",
            "-q",
            "--json",
        ])
        .arg(&json)
        .arg("s3://bkt/p")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let data = |server: &Server| {
        stored(server, "p/ioscale.d").iter().any(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("file.")
        })
    };
    wait_for("the run's objects", || data(&server));
    // SAFETY: kill(2) on the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::metadata(&json).unwrap().len() > 0,
        "the results so far are kept"
    );
    assert!(
        stored(&server, "p/ioscale.d").is_empty(),
        "{:?}",
        stored(&server, "p")
    );
    foreign_intact(&server);
}

/// The file objects the server holds below the meta tree (`fW.N`; the
/// markers and the lock left out).
fn meta_objects(server: &Server) -> Vec<PathBuf> {
    stored(server, "m/ioscale-meta.d")
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with('f'))
        .collect()
}

#[test]
fn meta_puts_heads_gets_and_deletes_objects_the_server_holds() {
    let Some(server) = start() else { return };
    put_foreign(&server, "m/theirs", b"not ioscale's");
    let meta = |ops: &str, keep: bool| {
        let mut args = vec![
            "meta",
            "--ops",
            ops,
            "--threads",
            "2",
            "--files",
            "15",
            "--file-size",
            "3000",
            "--verify",
            "-q",
        ];
        if keep {
            args.push("--keep");
        }
        args.push("s3://bkt/m");
        run(&mut ioscale(&server, None), &args)
    };
    let out = meta("create,stat,read,readdir", true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 30 objects of 3000 bytes: one PUT each.
    let objs = meta_objects(&server);
    assert_eq!(objs.len(), 30, "{objs:?}");
    for o in &objs {
        assert_eq!(std::fs::metadata(o).unwrap().len(), 3000, "{}", o.display());
    }
    // The kept tree's delete removes them; the foreign object stays.
    let out = meta("delete", false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        meta_objects(&server).is_empty(),
        "{:?}",
        meta_objects(&server)
    );
    let theirs = std::fs::read(server.object_path(BUCKET, "m/theirs")).unwrap();
    assert_eq!(theirs, b"not ioscale's");
    // What a store lacks is refused before anything is made.
    let out = meta("create,rename", false);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim(),
        "ioscale: error: --ops rename: the s3 backend has no atomic rename"
    );
}

#[test]
fn the_endpoint_flag_reaches_the_server_without_the_environment() {
    let Some(server) = start() else { return };
    let endpoint = server.endpoint();
    let mut cmd = ioscale(&server, None);
    cmd.env_remove("AWS_ENDPOINT_URL");
    let mut args = RUN.to_vec();
    args.extend([
        "--endpoint",
        &endpoint,
        "--addressing",
        "path",
        "s3://bkt/p",
    ]);
    let out = run(&mut cmd, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("checked 4 MiB, 0 bad bytes"), "{text}");
    let out = run(
        &mut ioscale(&server, None),
        &["clean", "--addressing", "sideways", "s3://bkt/p"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--addressing sideways"));
}

/// 503 SlowDown on the first two PUTs of data objects and a 500 on the
/// first GET of one, injected by the fault proxy: the data still
/// verifies, and each phase's record counts exactly what the proxy
/// injected in it (throttles in the write phase, the server error in the
/// read phase), shown in the human output too.
#[test]
fn injected_throttles_and_errors_are_counted_per_phase_and_the_data_verifies() {
    use objstore::testing::{Action, FaultProxy, Rule};
    let Some(server) = start() else { return };
    let proxy = FaultProxy::start(
        server.addr(),
        vec![
            Rule::new(Action::Status(503))
                .method("PUT")
                .path_contains("/ioscale.d/file.")
                .limit(2),
            Rule::new(Action::Status(500))
                .method("GET")
                .path_contains("/ioscale.d/file.")
                .limit(1),
        ],
    )
    .unwrap();
    let json = server.root().join("retries.json");
    let out = run(
        ioscale(&server, None).env("AWS_ENDPOINT_URL", proxy.endpoint()),
        &[
            "run",
            "--op",
            "write,read",
            "--size",
            "64k",
            "--xfer",
            "64k",
            "--threads",
            "2",
            "--verify",
            "--json",
            json.to_str().unwrap(),
            "s3://bkt/t",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(proxy.stats().picked, vec![2, 1], "the proxy injected these");
    let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let phase = |op: &str| {
        rec["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["op"] == op)
            .unwrap_or_else(|| panic!("no {op} phase in {rec}"))
            .clone()
    };
    let (w, r) = (phase("write"), phase("read"));
    let n = |p: &serde_json::Value, k: &str| p["retries"][k].as_u64().unwrap();
    assert_eq!((n(&w, "throttled"), n(&w, "server_errors")), (2, 0), "{w}");
    assert_eq!(n(&w, "dropped"), 0);
    // Two workers: the two 503s hit one request twice or two once each.
    assert!((1..=2).contains(&n(&w, "requests_retried")), "{w}");
    assert_eq!((n(&r, "throttled"), n(&r, "server_errors")), (0, 1), "{r}");
    assert_eq!(n(&r, "requests_retried"), 1);
    assert!(w["retries"]["backoff_s"].as_f64().unwrap() >= 0.0);
    assert_eq!(
        (w["errors"].as_u64(), r["errors"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(r["verify"]["bad_bytes"].as_u64(), Some(0), "{r}");
    assert_eq!(r["verify"]["checked_bytes"].as_u64(), Some(128 << 10));
    assert!(text.contains("2 throttled (503 SlowDown/429)"), "{text}");
    assert!(text.contains("1 server error(s)"), "{text}");
    // Without faults there is no retry line and the field says zero.
    let clean = server.root().join("clean.json");
    let out = run(
        &mut ioscale(&server, None),
        &[
            "run",
            "--op",
            "write",
            "--size",
            "64k",
            "--xfer",
            "64k",
            "--json",
            clean.to_str().unwrap(),
            "s3://bkt/t",
        ],
    );
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("retried"));
    let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(&clean).unwrap()).unwrap();
    assert_eq!(
        rec["phases"][0]["retries"]["requests_retried"].as_u64(),
        Some(0)
    );
}

/// A sweep over worker counts on an s3:// target, the endpoint given to
/// the inner command only (not in the environment): every point runs
/// against the server, verifies, and leaves no object of its own behind;
/// the foreign objects stay.
#[test]
fn a_sweep_of_worker_counts_runs_on_the_store_and_cleans_up() {
    let Some(server) = start() else { return };
    put_foreign(&server, "p/theirs", b"not ioscale's");
    put_foreign(&server, "p/ioscale.d-lookalike", b"also not");
    let json = server.root().join("sweep.json");
    let endpoint = server.endpoint();
    let mut cmd = ioscale(&server, None);
    cmd.env_remove("AWS_ENDPOINT_URL");
    let out = run(
        &mut cmd,
        &[
            "sweep",
            "--threads",
            "1,2,4",
            "--json",
            json.to_str().unwrap(),
            "--",
            "run",
            "--endpoint",
            &endpoint,
            "s3://bkt/p",
            "--op",
            "write,read",
            "--size",
            "1m",
            "--xfer",
            "1m",
            "--verify",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let points = rec["points"].as_array().unwrap();
    let threads: Vec<u64> = points
        .iter()
        .map(|p| p["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(threads, [1, 2, 4], "{rec}");
    for p in points {
        let ops: Vec<&str> = p["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["op"].as_str().unwrap())
            .collect();
        assert_eq!(ops, ["write", "read"], "{p}");
    }
    assert!(stored(&server, "p/ioscale.d").is_empty());
    foreign_intact(&server);
}
