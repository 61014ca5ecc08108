//! `ioscale ior`: IOR's syntax, names, phases, checks and outputs, on the
//! repository's real file system.

mod common;

use std::path::Path;

use common::*;

fn ior(args: &[&str]) -> std::process::Output {
    let mut a = vec!["ior"];
    a.extend_from_slice(args);
    run(&a)
}

#[test]
fn unsupported_options_name_the_option_and_the_native_one() {
    for (args, opt, native) in [
        (vec!["-w", "-Z"], "-Z", "--reorder-offset"),
        (vec!["-a", "MPIIO"], "-a MPIIO", "--engine io_uring"),
        (vec!["-w", "-c"], "-c", "-a POSIX"),
        (vec!["-w", "-m"], "-m", "ioscale sweep"),
        (vec!["--mpiio.hints=x"], "--mpiio.hints", "docs/compat.md"),
        (vec!["-O", "bogus=1"], "-O bogus", "docs/compat.md"),
        (
            vec!["-w", "-D", "5", "-O", "stoneWallingWearOut=1"],
            "stoneWallingWearOut",
            "--time",
        ),
    ] {
        let out = ior(&args);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(opt), "{args:?}: {err}");
        assert!(err.contains(native), "{args:?}: {err}");
    }
}

/// What IOR 4.0 refuses, ioscale refuses too (exit 2, naming the option
/// and what to use instead).
#[test]
fn options_ior_4_refuses_are_refused() {
    let dir = scratch();
    let f = dir.path().join("f");
    for (args, opt, native) in [
        (vec!["-w", "-q"], "-q", "-R"),
        (vec!["-w", "-B"], "-B", "--posix.odirect"),
        (
            vec!["-w", "-O", "stoneWallingWearOut=1"],
            "stoneWallingWearOut",
            "-D",
        ),
    ] {
        let mut a = args.clone();
        a.extend_from_slice(&["-o", s(&f)]);
        let out = ior(&a);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(opt) && err.contains(native), "{args:?}: {err}");
    }
    assert_empty(dir.path());
}

/// IOR 4.0's whole option list (src/parse_options.c and the POSIX
/// backend): each option is either accepted or refused with exit 2 and a
/// message that names it and the nearest native option, or says there is
/// none and why.
#[test]
fn every_ior_4_option_is_accepted_or_refused_with_the_nearest_one() {
    let dir = scratch();
    let f = dir.path().join("f");
    let opts: &[&[&str]] = &[
        &["-a", "POSIX"],
        &["-A", "7"],
        &["-b", "64k"],
        &["-c"],
        &["--collective"],
        &["-C"],
        &["-d", "0"],
        &["-D", "0"],
        &["-O", "stoneWallingWearOut=1"],
        &["-O", "stoneWallingWearOutIterations=4"],
        &["-O", "stoneWallingStatusFile=sw.txt"],
        &["-O", "minTimeDuration=1"],
        &["-e"],
        &["-E"],
        &["-f", "script.txt"],
        &["-F"],
        &["-g"],
        &["-G", "5"],
        &["-i", "1"],
        &["-j", "3"],
        &["-k"],
        &["-K"],
        &["-l", "offset"],
        &["--dataPacketType=offset"],
        &["-m"],
        &["-M", "1g"],
        &["-N", "1"],
        &["-o", "x"],
        &["-O", "summaryFormat=JSON"],
        &["-O", "summaryFile=sum.txt"],
        &["-O", "saveRankPerformanceDetailsCSV=r.csv"],
        &["-Q", "1"],
        &["-r"],
        &["-R"],
        &["-s", "1"],
        &["-t", "64k"],
        &["-T", "1"],
        &["-u"],
        &["-v"],
        &["-w"],
        &["-W"],
        &["-x"],
        &["-X", "3"],
        &["-y"],
        &["-Y"],
        &["-z"],
        &["--randomPrefill=1m"],
        &["--random-offset-seed=3"],
        &["-Z"],
        &["--warningAsErrors"],
        &["--dryRun"],
        &["--posix.odirect"],
        &["--posix.rangelocks"],
        &["-h"],
        // IOR 4.0's -O directives (its DecodeDirective).
        &["-O", "api=POSIX"],
        &["-O", "refnum=3"],
        &["-O", "debug=1"],
        &["-O", "platform=x"],
        &["-O", "testfile=y"],
        &["-O", "dualmount=1"],
        &["-O", "allocateBufferOnGPU=1"],
        &["-O", "GPUid=0"],
        &["-O", "GPUDirect=1"],
        &["-O", "deadlineForStonewalling=0"],
        &["-O", "maxTimeDuration=1"],
        &["-O", "outlierThreshold=2"],
        &["-O", "numNodes=1"],
        &["-O", "numTasks=1"],
        &["-O", "repetitions=1"],
        &["-O", "interTestDelay=0"],
        &["-O", "interIODelay=10"],
        &["-O", "readFile=1"],
        &["-O", "writeFile=1"],
        &["-O", "filePerProc=1"],
        &["-O", "taskPerNodeOffset=1"],
        &["-O", "reorderTasksConstant=1"],
        &["-O", "reorderTasksRandom=1"],
        &["-O", "reorderTasksRandomSeed=4"],
        &["-O", "reorderTasks=1"],
        &["-O", "checkWrite=1"],
        &["-O", "checkRead=1"],
        &["-O", "keepFile=1"],
        &["-O", "keepFileWithError=1"],
        &["-O", "multiFile=1"],
        &["-O", "warningAsErrors=1"],
        &["-O", "segmentCount=1"],
        &["-O", "blockSize=64k"],
        &["-O", "transferSize=64k"],
        &["-O", "singleXferAttempt=1"],
        &["-O", "intraTestBarriers=1"],
        &["-O", "verbose=1"],
        &["-O", "collective=1"],
        &["-O", "setTimeStampSignature=3"],
        &["-O", "dataPacketType=o"],
        &["-O", "uniqueDir=1"],
        &["-O", "useExistingTestFile=1"],
        &["-O", "fsyncPerWrite=1"],
        &["-O", "fsync=1"],
        &["-O", "randomOffset=1"],
        &["-O", "memoryPerTask=1g"],
        &["-O", "memoryPerNode=1g"],
        &["-O", "summaryAlways=1"],
    ];
    for opt in opts {
        let mut a = vec!["-w", "-t", "64k", "-b", "64k", "-o", s(&f)];
        a.extend_from_slice(opt);
        a.push("--print-spec");
        let out = ior(&a);
        assert_no_panic(&out);
        let code = out.status.code();
        if code == Some(0) {
            continue;
        }
        assert_eq!(code, Some(2), "{opt:?}: {}", stderr(&out));
        let err = stderr(&out);
        let name = opt[0].split('=').next().unwrap();
        let shown = if name == "-O" {
            opt[1].split('=').next().unwrap()
        } else {
            name
        };
        assert!(err.contains(shown), "{opt:?} not named: {err}");
        assert!(
            names_a_native_option(&err),
            "{opt:?}: no native option named: {err}"
        );
    }
    assert_empty(dir.path());
}

#[test]
fn verbose_adds_the_max_lines_as_ior_4_does() {
    let dir = scratch();
    let f = dir.path().join("f");
    let out = ior(&["-v", "-w", "-r", "-t", "64k", "-b", "256k", "-o", s(&f)]);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("\nMax Write: "), "{text}");
    assert!(text.contains("\nMax Read:  "), "{text}");
    assert!(text.contains("\nParticipating tasks : 1\n"), "{text}");
    // The skew line carries a measured figure, never a fixed string.
    let skew = text
        .lines()
        .find_map(|l| l.strip_prefix("Start time skew across all tasks: "))
        .expect("-v prints the measured start skew");
    assert!(skew.ends_with(" sec"), "{skew}");
    let quiet = ior(&["-w", "-r", "-t", "64k", "-b", "256k", "-o", s(&f)]);
    assert!(!stdout(&quiet).contains("Max Write"), "{}", stdout(&quiet));
    assert_empty(dir.path());
}

/// With -v IOR prints a `remove` row after each repetition's phases (its
/// files removed and timed), in the text and in the JSON `Results`; not
/// without -v, and not with -k (nothing removed).
#[test]
fn verbose_prints_each_repetitions_remove_row() {
    let dir = scratch();
    let f = dir.path().join("f");
    let base = [
        "-w",
        "-r",
        "-i",
        "2",
        "-t",
        "64k",
        "-b",
        "256k",
        "-o",
        s(&f),
    ];
    let mut v = vec!["-v"];
    v.extend_from_slice(&base);
    let out = ior(&v);
    assert_code(&out, 0);
    let text = stdout(&out);
    let rows: Vec<&str> = text
        .lines()
        // The Results table: before the Max lines and the summary.
        .take_while(|l| !l.starts_with("Max Write"))
        .filter(|l| {
            ["write ", "read ", "remove "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    let kinds: Vec<(&str, &str)> = rows
        .iter()
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            (t[0], *t.last().unwrap())
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("write", "0"),
            ("read", "0"),
            ("remove", "0"),
            ("write", "1"),
            ("read", "1"),
            ("remove", "1")
        ],
        "{text}"
    );
    for r in rows.iter().filter(|l| l.starts_with("remove")) {
        let t: Vec<&str> = r.split_whitespace().collect();
        assert_eq!(t[1..9], ["-"; 8], "{r}");
        let secs: f64 = t[9].parse().unwrap_or_else(|_| panic!("{r}"));
        assert!(secs > 0.0 && secs < 60.0, "{r}");
    }
    assert_empty(dir.path());
    // JSON: the removals join the Results list.
    let mut j = v.clone();
    j.extend_from_slice(&["-O", "summaryFormat=JSON"]);
    let out = ior(&j);
    assert_code(&out, 0);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let access: Vec<&str> = doc["tests"][0]["Results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["access"].as_str().unwrap())
        .collect();
    assert_eq!(
        access,
        ["write", "read", "remove", "write", "read", "remove"]
    );
    // Without -v, and with -k: no remove row.
    let quiet = ior(&base);
    assert!(!stdout(&quiet).contains("\nremove "), "{}", stdout(&quiet));
    let mut k = vec!["-v", "-k"];
    k.extend_from_slice(&base);
    let kept = ior(&k);
    assert_code(&kept, 0);
    assert!(!stdout(&kept).contains("\nremove "), "{}", stdout(&kept));
}

/// (start, end) of each blank-separated token of a line.
fn spans(line: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c == ' ', start) {
            (false, None) => start = Some(i),
            (true, Some(s0)) => {
                out.push((s0, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s0) = start {
        out.push((s0, line.len()));
    }
    out
}

/// A real run's columns sit where IOR 4.0 puts them: each Results value
/// starts under its heading (IOR left-justifies them), each summary
/// figure ends under its heading's last character (right-justified).
#[test]
fn a_real_runs_columns_line_up_as_in_ior_4() {
    let dir = scratch();
    let f = dir.path().join("ior.test");
    let out = ior(&[
        "-w",
        "-r",
        "-N",
        "2",
        "-F",
        "-t",
        "64k",
        "-b",
        "256k",
        "-o",
        s(&f),
    ]);
    assert_code(&out, 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let h = lines
        .iter()
        .position(|l| l.starts_with("access    bw(MiB/s)"))
        .unwrap();
    let heads: Vec<usize> = spans(lines[h]).iter().map(|s| s.0).collect();
    for row in &lines[h + 2..h + 4] {
        assert!(row.ends_with("0   "), "IOR pads the iter column: {row:?}");
        let starts: Vec<usize> = spans(row).iter().map(|s| s.0).collect();
        assert_eq!(starts, heads, "{row}\n{}", lines[h]);
    }
    let h = lines
        .iter()
        .position(|l| l.starts_with("Operation "))
        .unwrap();
    // Max(MiB) … Mean(s): the nine figures after the operation.
    let ends: Vec<usize> = spans(lines[h])[1..10].iter().map(|s| s.1).collect();
    for row in &lines[h + 1..h + 3] {
        let got: Vec<usize> = spans(row)[1..10].iter().map(|s| s.1).collect();
        assert_eq!(got, ends, "{row}\n{}", lines[h]);
        assert_eq!(spans(row).len(), spans(lines[h]).len(), "{row}");
    }
    assert_empty(dir.path());
}

#[test]
fn help_has_examples() {
    let out = ior(&["--help"]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("Examples:"));
    let out = run(&["--help"]);
    assert!(stdout(&out).contains("ioscale ior"));
    assert!(stdout(&out).contains("ioscale dd"));
}

#[test]
fn equals_and_space_syntax_give_the_same_spec() {
    let a = ior(&[
        "-w",
        "-b=256k",
        "-t=64k",
        "-s=2",
        "-N=2",
        "-o=/x/f",
        "--print-spec",
    ]);
    let b = ior(&[
        "-w",
        "-b",
        "256k",
        "-t",
        "64k",
        "-s",
        "2",
        "-N",
        "2",
        "-o",
        "/x/f",
        "--print-spec",
    ]);
    let c = ior(&[
        "-w",
        "-b256k",
        "-t64k",
        "-s2",
        "-N2",
        "-o/x/f",
        "--print-spec",
    ]);
    assert_code(&a, 0);
    assert_eq!(stdout(&a), stdout(&b));
    assert_eq!(stdout(&a), stdout(&c));
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v["block"], 256 * 1024);
    assert_eq!(v["threads"], 2);
    assert_eq!(v["naming"]["path"], "/x/f");
}

#[test]
fn the_binary_called_ior_is_the_front_end() {
    let dir = scratch();
    let link = dir.path().join("ior");
    std::os::unix::fs::symlink(ioscale_path(), &link).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let f = data.join("f");
    let out = std::process::Command::new(&link)
        .args(["-w", "-t", "64k", "-b", "256k", "-o", s(&f)])
        .output()
        .unwrap();
    assert_no_panic(&out);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with("IOR-4.0.0: MPI Coordinated Test of Parallel I/O\n"),
        "{text}"
    );
    // IOR 4.0 prints the Max lines only with -v.
    assert!(!text.contains("Max Write:"), "{text}");
    assert!(text.contains("Summary of all tests:"), "{text}");
    assert_empty(&data);
}

#[test]
fn shared_file_is_exactly_the_o_path_and_per_task_names_follow_ior() {
    let dir = scratch();
    let f = dir.path().join("ior.bin");
    let out = ior(&[
        "-w",
        "-k",
        "-N",
        "2",
        "-t",
        "64k",
        "-b",
        "64k",
        "-s",
        "4",
        "-o",
        s(&f),
    ]);
    assert_code(&out, 0);
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 2 * 4 * 64 * 1024);
    let out = ior(&[
        "-w",
        "-k",
        "-F",
        "-N",
        "2",
        "-t",
        "64k",
        "-b",
        "64k",
        "-o",
        s(&dir.path().join("g")),
    ]);
    assert_code(&out, 0);
    let names = names(dir.path());
    for n in [
        "ior.bin",
        "g.00000000",
        "g.00000001",
        ".ior.bin.ioscale-marker",
        ".g.ioscale-marker",
    ] {
        assert!(names.contains(&n.to_string()), "{n} missing: {names:?}");
    }
    // A run without -k removes them again (IOR's behaviour), marker and all.
    assert_code(
        &ior(&[
            "-r",
            "-N",
            "2",
            "-t",
            "64k",
            "-b",
            "64k",
            "-s",
            "4",
            "-o",
            s(&f),
        ]),
        0,
    );
    assert_code(
        &ior(&[
            "-r",
            "-F",
            "-N",
            "2",
            "-t",
            "64k",
            "-b",
            "64k",
            "-o",
            s(&dir.path().join("g")),
        ]),
        0,
    );
    assert_empty(dir.path());
}

#[test]
fn keep_then_read_with_unique_dirs() {
    let dir = scratch();
    let f = dir.path().join("ior.bin");
    let common = [
        "-N",
        "3",
        "-t",
        "64k",
        "-b",
        "64k",
        "-s",
        "2",
        "-F",
        "-u",
        "-o",
        s(&f),
    ];
    let mut w = vec!["-w", "-k"];
    w.extend_from_slice(&common);
    assert_code(&ior(&w), 0);
    for i in 0..3 {
        let p = dir.path().join(format!("{i}/ior.bin.{i:08}"));
        assert_eq!(
            std::fs::metadata(&p).unwrap().len(),
            128 * 1024,
            "{}",
            p.display()
        );
    }
    let mut r = vec!["-r"];
    r.extend_from_slice(&common);
    let out = ior(&r);
    assert_code(&out, 0);
    // IOR 4.0's Path: the first task's file name.
    let path = format!(
        "\nPath                : {}/0/ior.bin.00000000\n",
        s(dir.path())
    );
    assert!(stdout(&out).contains(&path), "{}", stdout(&out));
    assert!(stdout(&out).contains("\nread "), "{}", stdout(&out));
    assert!(!stdout(&out).contains("\nwrite "), "{}", stdout(&out));
    // Read without -k: files, per-task directories and marker are gone.
    assert_empty(dir.path());
    // Reading again finds nothing and says how to write first.
    let out = ior(&r);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("ioscale ior -w -k"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_foreign_file_at_the_o_path_is_never_overwritten_or_removed() {
    let dir = scratch();
    let f = dir.path().join("precious");
    std::fs::write(&f, vec![7u8; 300_000]).unwrap();
    let out = ior(&["-w", "-t", "64k", "-b", "256k", "-o", s(&f)]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("did not make it"), "{}", stderr(&out));
    // Reading a file ioscale did not make is fine, and leaves it in place.
    let out = ior(&["-r", "-t", "64k", "-b", "256k", "-o", s(&f)]);
    assert_code(&out, 0);
    assert_eq!(std::fs::read(&f).unwrap(), vec![7u8; 300_000]);
}

#[test]
fn verification_finds_a_flipped_byte_and_its_offset() {
    let dir = scratch();
    let f = dir.path().join("chk");
    let base = [
        "-N",
        "2",
        "-F",
        "-t",
        "64k",
        "-b",
        "128k",
        "-G",
        "42",
        "-o",
        s(&f),
    ];
    let mut w = vec!["-w", "-W", "-k"];
    w.extend_from_slice(&base);
    let out = ior(&w);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("Verifying contents of the file(s) just written."));
    assert!(
        !stdout(&out).contains("\nread "),
        "-W alone shows no measured read"
    );
    flip_byte(&dir.path().join("chk.00000001"), 70_001);
    let mut r = vec!["-r", "-R", "-k"];
    r.extend_from_slice(&base);
    let out = ior(&r);
    assert_code(&out, 1);
    let text = stdout(&out);
    assert!(text.contains("incorrect data on read"), "{text}");
    assert!(text.contains("chk.00000001 at offset 70001"), "{text}");
    let victim = format!("{}.00000001", s(&f));
    let on_stderr = format!("MISMATCH {victim} first bad offset 70001");
    assert!(stderr(&out).contains(&on_stderr), "{}", stderr(&out));
    // In the JSON and CSV documents too, and on standard error always.
    let mut j = r.clone();
    j.extend_from_slice(&["-O", "summaryFormat=JSON"]);
    let out = ior(&j);
    assert_code(&out, 1);
    assert!(stderr(&out).contains(&on_stderr), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = &v["tests"][0]["dataCheck"][0];
    assert_eq!(check["access"], "read");
    assert!(check["badBytes"].as_u64().unwrap() > 0, "{check}");
    assert_eq!(check["mismatches"][0]["file"], victim.as_str());
    assert_eq!(check["mismatches"][0]["offset"], 70001);
    let mut c = r.clone();
    c.extend_from_slice(&["-O", "summaryFormat=CSV"]);
    let out = ior(&c);
    assert_code(&out, 1);
    assert!(stderr(&out).contains(&on_stderr), "{}", stderr(&out));
    let csv = stdout(&out);
    assert!(csv.contains(&format!(",{victim},70001\n")), "{csv}");
    // -G must match the seed the data was written with.
    let mut bad = vec!["-r", "-R", "-k", "-G", "7"];
    bad.extend_from_slice(&base[..8]);
    bad.extend_from_slice(&["-o", s(&f)]);
    assert_code(&ior(&bad), 2);
}

fn json_of(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn summary_format_json_file() {
    let dir = scratch();
    let f = dir.path().join("f");
    let sum = dir.path().join("summary.json");
    let out = ior(&[
        "-w",
        "-r",
        "-i",
        "2",
        "-N",
        "2",
        "-t",
        "64k",
        "-b",
        "256k",
        "-O",
        "summaryFormat=JSON",
        "-O",
        &format!("summaryFile={}", s(&sum)),
        "-o",
        s(&f),
    ]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("Summary of all tests:"));
    let v = json_of(&sum);
    assert_eq!(v["Version"], "4.0.0");
    let summary = v["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 2);
    assert_eq!(summary[0]["operation"], "write");
    assert_eq!(summary[1]["operation"], "read");
    for k in [
        "bwMaxMIB",
        "bwMinMIB",
        "bwMeanMIB",
        "bwStdMIB",
        "OPsMax",
        "OPsMean",
        "MeanTime",
        "xsizeMiB",
    ] {
        assert!(summary[0][k].is_number(), "{k}: {}", summary[0]);
    }
    assert_eq!(summary[0]["numTasks"], 2);
    assert_eq!(summary[0]["repetitions"], 2);
    assert_eq!(summary[0]["xsizeMiB"], 0.5);
    let results = v["tests"][0]["Results"].as_array().unwrap();
    // IOR 4.0: one flat list of every phase of every repetition.
    assert_eq!(results.len(), 4, "{results:?}");
    let access: Vec<&str> = results
        .iter()
        .map(|r| r["access"].as_str().unwrap())
        .collect();
    assert_eq!(access, ["write", "read", "write", "read"]);
    // `max` only with -v, as IOR 4.0.
    assert!(v["tests"][0].get("max").is_none());
    assert_eq!(v["tests"][0]["Parameters"]["repetitions"], 2);
    // CSV to stdout when no summaryFile is given.
    let out = ior(&[
        "-w",
        "-t",
        "64k",
        "-b",
        "256k",
        "-O",
        "summaryFormat=CSV",
        "-o",
        s(&f),
    ]);
    assert_code(&out, 0);
    let csv = stdout(&out);
    // IOR 4.0's CSV: the results header and one row per phase.
    assert!(
        csv.starts_with("access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter\n"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 2, "{csv}");
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(
        (row[0], row[4], row[5], row[10], row[11]),
        ("write", "256.0000", "64.0000", "1", "0"),
        "{csv}"
    );
}

/// Runs `ioscale ARGS` under `strace -f` and returns, in order, what
/// happened to `file`: "open" for every openat of it, "unlink" for every
/// unlink. None when strace is not installed.
fn opens_and_unlinks(args: &[&str], file: &Path) -> Option<(std::process::Output, Vec<String>)> {
    let log = tempfile::NamedTempFile::new().unwrap();
    let out = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=openat,unlink,unlinkat", "-o"])
        .arg(log.path())
        .arg(ioscale_path())
        .args(args)
        .output()
        .ok()?;
    let quoted = format!("\"{}\"", s(file));
    // Cleanup may unlink, and the workers open, by name relative to a
    // held directory handle.
    let base = format!("\"{}\"", file.file_name().unwrap().to_str().unwrap());
    let events = std::fs::read_to_string(log.path())
        .unwrap()
        .lines()
        .filter(|l| {
            (l.contains(&quoted)
                || ((l.contains("unlinkat(") || l.contains("openat(")) && l.contains(&base)))
                && !l.contains("ENOENT")
        })
        .filter_map(|l| {
            if l.contains("openat(") {
                Some("open".to_string())
            } else if l.contains("unlink") {
                Some("unlink".to_string())
            } else {
                None
            }
        })
        .collect();
    Some((out, events))
}

#[test]
fn every_repetition_writes_fresh_files_as_ior_does() {
    // IOR removes the files before each repetition's write phase; writing
    // over the files the repetition before left measures a different
    // (faster) thing. strace shows the order of opens and unlinks.
    let dir = scratch();
    let o = dir.path().join("test");
    let args = [
        "ior",
        "-w",
        "-i",
        "3",
        "-F",
        "-t",
        "64k",
        "-b",
        "256k",
        "-o",
        s(&o),
    ];
    let f = dir.path().join("test.00000000");
    let Some((out, ev)) = opens_and_unlinks(&args, &f) else {
        eprintln!("SKIPPED: strace not installed");
        return;
    };
    assert_code(&out, 0);
    assert_eq!(
        ev,
        ["open", "unlink", "open", "unlink", "open", "unlink"],
        "{}",
        stderr(&out)
    );
    assert_empty(dir.path());

    // `ioscale run --reps` likewise; the JSON says which.
    let t = scratch();
    let j = dir.path().join("r.json");
    let f = t.path().join("ioscale.d").join("file.00000000");
    let base = [
        "run", "--op", "write", "--reps", "3", "--size", "256k", "--xfer", "64k",
    ];
    let mut a = base.to_vec();
    a.extend_from_slice(&["--json", s(&j), s(t.path())]);
    let (out, ev) = opens_and_unlinks(&a, &f).unwrap();
    assert_code(&out, 0);
    assert_eq!(ev, ["open", "unlink", "open", "unlink", "open", "unlink"]);
    assert_eq!(json(&j)["spec"]["reuse_files"], false);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!said.contains("--reuse"), "{said}");

    // --reuse writes over the same files, and says so.
    let mut a = base.to_vec();
    a.extend_from_slice(&["--reuse", "--json", s(&j), s(t.path())]);
    let (out, ev) = opens_and_unlinks(&a, &f).unwrap();
    assert_code(&out, 0);
    assert_eq!(ev, ["open", "open", "open", "unlink"]);
    assert_eq!(json(&j)["spec"]["reuse_files"], true);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("warning: --reuse"), "{said}");
    assert_empty(t.path());
}

#[test]
fn reading_files_ior_wrote_says_what_really_happens_to_them() {
    // Files a real IOR left (no ioscale marker): a read with -k leaves
    // them, and so would any later ioscale run; the note must not promise
    // that "a later run without -k removes them".
    let dir = scratch();
    let o = dir.path().join("ior.bin");
    std::fs::write(&o, vec![1u8; 1 << 20]).unwrap();
    let out = ior(&["-r", "-k", "-t", "64k", "-b", "1m", "-o", s(&o)]);
    assert_code(&out, 0);
    let err = stderr(&out);
    assert!(!err.contains("without -k removes them"), "{err}");
    assert!(err.contains("did not make them"), "{err}");
    // The page-cache warning speaks IOR's option names.
    assert!(err.contains("--posix.odirect"), "{err}");
    assert!(!err.contains("Use --direct"), "{err}");
    assert!(o.exists());
    let out = ior(&["-r", "-t", "64k", "-b", "1m", "-o", s(&o)]);
    assert_code(&out, 0);
    assert!(
        o.exists(),
        "a read never removes files ioscale did not make"
    );
}
