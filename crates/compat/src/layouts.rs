//! The compatibility layouts compared byte for byte with stored samples.
//!
//! Each golden file under `crates/ioscale/tests/golden/` was written by
//! hand from the reference version's own output format (IOR 4.0.0,
//! mdtest 4.0.0, smallfile 1.1; docs/compat.md names them): the header
//! lines, column widths and trailing blanks as that version prints them.
//! The records rendered here hold fixed figures chosen so that every
//! printed number is known, so the comparison checks the layout, not a
//! measurement. Where ioscale differs on purpose (mdtest's tree rows,
//! smallfile's wall-clock headline) the golden file shows ioscale's line.

use report::{
    ClusterInfo, Exporter, FilesRecord, HostInfo, JobSpec, Mismatch, PhaseRecord, ResultSet,
    ThreadFiles, VerifyRecord, WorkerRecord, SCHEMA,
};
use stats::LatencySummary;

use crate::ior::render::{IorCsvExporter, IorInfo, IorJsonExporter, IorTextExporter};
use crate::mdtest::render::{MdtestInfo, MdtestTextExporter};
use crate::smallfile::render::{SmallfileInfo, SmallfileTextExporter};
use crate::FsStats;

const MIB: u64 = 1 << 20;

fn golden(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ioscale/tests/golden")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Line by line, so a failure names the first line that differs.
fn same(got: &str, want: &str) {
    for (n, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "line {} differs\n--- got:\n{got}", n + 1);
    }
    assert_eq!(got, want, "line count or final newline differ");
}

fn record(phases: Vec<PhaseRecord>) -> ResultSet {
    let spec = spec::RawWorkload {
        target: Some("/data".into()),
        ops: vec![spec::Op::Write],
        ..Default::default()
    }
    .build()
    .expect("a valid workload");
    ResultSet {
        schema: SCHEMA,
        tool: "ioscale".into(),
        version: "0.0.0-test".into(),
        command: vec![],
        started: "2026-11-23T00:12:14Z".into(),
        host: HostInfo {
            hostname: "vm".into(),
            ..Default::default()
        },
        spec: JobSpec::Run(spec),
        warnings: vec![],
        interrupted: false,
        errors: vec![],
        phases,
        failed_phases: Vec::new(),
        summary: vec![],
    }
}

/// Two workers starting `skew` seconds apart.
fn workers(bytes: u64, end: f64, skew: f64) -> Vec<WorkerRecord> {
    (0..2)
        .map(|w| WorkerRecord {
            worker: w,
            host: "vm".into(),
            bytes: bytes / 2,
            ops: 0,
            start_s: w as f64 * skew,
            end_s: end,
            ..Default::default()
        })
        .collect()
}

/// A phase of IOR's sample: 32 transfers of 1 MiB by 2 tasks.
#[allow(clippy::too_many_arguments)]
fn ior_phase(
    op: &str,
    bw: f64,
    lat_s: f64,
    open: f64,
    io: f64,
    close: f64,
    total: f64,
) -> PhaseRecord {
    let bytes = 32 * MIB;
    PhaseRecord {
        op: op.into(),
        threads: 2,
        bytes,
        ops: 32,
        read_bytes: if op == "read" { bytes } else { 0 },
        write_bytes: if op == "write" { bytes } else { 0 },
        elapsed_s: total,
        bw_mib_s: bw,
        bw_mb_s: bytes as f64 / 1e6 / total,
        iops: 32.0 / total,
        lat_us: LatencySummary {
            mean: lat_s * 1e6,
            ..Default::default()
        },
        open_s: open,
        io_s: io,
        close_s: close,
        // Both tasks open, transfer and close alike: IOR's spans over the
        // tasks are the sections themselves.
        workers: workers(bytes, total, 0.0)
            .into_iter()
            .map(|w| WorkerRecord {
                open_s: open,
                io_s: io,
                close_s: close,
                end_s: open + io + close,
                ..w
            })
            .collect(),
        ..Default::default()
    }
}

fn fs() -> FsStats {
    FsStats {
        total_bytes: 252 << 30,
        used_bytes: (252u64 << 30) / 20,
        inodes: 16 << 20,
        used_inodes: (16u64 << 20) * 24 / 1000,
    }
}

fn ior_info() -> IorInfo {
    IorInfo {
        ior_version: "4.0.0".into(),
        command_line: "ior -w -r -t 1m -b 16m -F -o /data/ior.test -k".into(),
        began: "Mon Nov 23 00:12:14 2026".into(),
        finished: "Mon Nov 23 00:12:14 2026".into(),
        machine: "Linux vm".into(),
        test_filename: "/data/ior.test".into(),
        path: "/data/ior.test.00000000".into(),
        fs: Some(fs()),
        api: "POSIX".into(),
        file_per_proc: true,
        task_offset: 1,
        tasks: 2,
        repetitions: 1,
        xfer: MIB,
        block: 16 * MIB,
        segments: 1,
        write_file: true,
        read_file: true,
        keep_file: true,
        ..Default::default()
    }
}

fn ior_record() -> ResultSet {
    record(vec![
        ior_phase(
            "write", 437.35, 0.004564, 0.000131, 0.073075, 0.027746, 0.073168,
        ),
        ior_phase(
            "read",
            18275.83,
            0.000103,
            0.000010,
            32.0 / 18414.0,
            0.000100,
            32.0 / 18275.83,
        ),
    ])
}

#[test]
fn ior_text_is_ior_4_0_0s_layout() {
    let got = IorTextExporter { info: ior_info() }
        .render(&ior_record())
        .unwrap();
    same(&String::from_utf8(got).unwrap(), &golden("ior-4.0.0.txt"));
}

#[test]
fn ior_csv_is_ior_4_0_0s_document() {
    let got = IorCsvExporter { info: ior_info() }
        .render(&ior_record())
        .unwrap();
    same(&String::from_utf8(got).unwrap(), &golden("ior-4.0.0.csv"));
}

#[test]
fn ior_verbose_adds_max_lines_and_a_measured_skew_only() {
    let mut rs = ior_record();
    let info = IorInfo {
        verbose: 1,
        ..ior_info()
    };
    let text = |rs: &ResultSet| {
        String::from_utf8(IorTextExporter { info: info.clone() }.render(rs).unwrap()).unwrap()
    };
    // Workers that all started together: a measured skew of 0.
    let t = text(&rs);
    assert!(
        t.contains("\nStart time skew across all tasks: 0.00 sec\n"),
        "{t}"
    );
    assert!(t.contains("\nParticipating tasks : 2\n"), "{t}");
    assert!(
        t.contains("\nMax Write: 437.35 MiB/sec (458.59 MB/sec)\n"),
        "{t}"
    );
    assert!(t.contains("\nMax Read:  18275.83 MiB/sec"), "{t}");
    // The second worker started 0.25 s after the first.
    rs.phases[1].workers = workers(32 * MIB, 1.0, 0.25);
    assert!(text(&rs).contains("\nStart time skew across all tasks: 0.25 sec\n"));
    // The recorded figures win over the per-worker detail: the ranks'
    // barrier exits 0.5 s apart, their workers' starts 0.125 s apart.
    rs.phases[0].start_skew_s = Some(0.5);
    rs.phases[0].worker_start_spread_s = Some(0.125);
    assert!(text(&rs).contains("\nStart time skew across all tasks: 0.62 sec\n"));
    rs.phases[0].start_skew_s = None;
    rs.phases[0].worker_start_spread_s = None;
    // Nothing measured, nothing printed.
    for p in &mut rs.phases {
        p.workers.clear();
    }
    assert!(!text(&rs).contains("skew"), "{}", text(&rs));
    // Without -v: no Max lines, no skew (as IOR 4.0).
    let quiet = String::from_utf8(
        IorTextExporter { info: ior_info() }
            .render(&ior_record())
            .unwrap(),
    )
    .unwrap();
    assert!(
        !quiet.contains("Max Write") && !quiet.contains("skew"),
        "{quiet}"
    );
}

#[test]
fn ior_json_has_ior_4_0_0s_shape() {
    let doc = IorJsonExporter { info: ior_info() }
        .render(&ior_record())
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&doc).unwrap();
    assert_eq!(v["Version"], "4.0.0");
    let t = &v["tests"][0];
    assert_eq!(t["Path"], "/data/ior.test.00000000");
    assert_eq!(t["Capacity"], "252.0 GiB");
    assert_eq!(t["Used Inodes"], "2.4%");
    assert_eq!(t["Parameters"]["filePerProc"], 1);
    assert_eq!(t["Parameters"]["keepFile"], 1);
    assert_eq!(t["Parameters"]["blockSize"], 16 * MIB);
    assert_eq!(t["Options"]["access"], "file-per-process");
    // Results: one flat list, no array per repetition.
    let r = t["Results"].as_array().unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0]["access"], "write");
    assert_eq!(r[1]["access"], "read");
    assert!(r[0]["bwMiB"].is_number());
    // `max` only with -v, as IOR 4.0; no stonewall fields without one.
    assert!(t.get("max").is_none(), "{t}");
    assert!(v["summary"][0].get("StoneWallTime").is_none());
    assert_eq!(v["summary"][0]["bwMaxMIB"].as_f64().unwrap().round(), 437.0);
    assert!(t.get("dataCheck").is_none());
}

/// IOR's `Stonewall(MiB)` and `StoneWallbwMeanMIB` are a rate per task
/// (ior.c: each repetition's data ÷ numTasks, summed, ÷ the summed
/// stonewall times), `Stonewall(s)` the mean time.
#[test]
fn ior_stonewall_figures_are_a_rate_per_task() {
    let mut rs = ior_record();
    let mut second = ior_phase("write", 400.0, 0.004, 0.0, 0.08, 0.0, 0.08);
    second.rep = 1;
    rs.phases.insert(1, second);
    // Two repetitions of 2 tasks: 64 MiB in 2 s, then 32 MiB in 1 s.
    rs.phases[0].stonewall.s = 2.0;
    rs.phases[0].stonewall.bytes = 64 * MIB;
    rs.phases[1].stonewall.s = 1.0;
    rs.phases[1].stonewall.bytes = 32 * MIB;
    let info = IorInfo {
        deadline_s: 2,
        repetitions: 2,
        ..ior_info()
    };
    // (32 + 16) MiB per task ÷ 3 s = 16 MiB/s per task; 1.5 s on average.
    let text =
        String::from_utf8(IorTextExporter { info: info.clone() }.render(&rs).unwrap()).unwrap();
    let row = text
        .lines()
        .rfind(|l| l.starts_with("write "))
        .expect("a summary row");
    assert!(row.contains("       1.50         16.00 "), "{row}");
    let v: serde_json::Value =
        serde_json::from_slice(&IorJsonExporter { info }.render(&rs).unwrap()).unwrap();
    assert_eq!(v["summary"][0]["StoneWallTime"].as_f64(), Some(1.5));
    assert_eq!(v["summary"][0]["StoneWallbwMeanMIB"].as_f64(), Some(16.0));
}

#[test]
fn a_failed_data_check_is_in_every_document() {
    let mut rs = ior_record();
    rs.phases[1].verify = Some(VerifyRecord {
        checked_bytes: 32 * MIB,
        bad_bytes: 1,
        mismatches: vec![Mismatch {
            file: "/data/ior.test.00000001".into(),
            offset: 4097,
            bad_bytes: 1,
        }],
    });
    let info = ior_info();
    let json = IorJsonExporter { info: info.clone() }.render(&rs).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let c = &v["tests"][0]["dataCheck"][0];
    assert_eq!(c["access"], "read");
    assert_eq!(c["badBytes"], 1);
    assert_eq!(c["mismatches"][0]["file"], "/data/ior.test.00000001");
    assert_eq!(c["mismatches"][0]["offset"], 4097);
    let csv =
        String::from_utf8(IorCsvExporter { info: info.clone() }.render(&rs).unwrap()).unwrap();
    assert!(
        csv.contains("\nDataCheck,access,iter,checkedBytes,badBytes,file,offset\n"),
        "{csv}"
    );
    assert!(
        csv.contains(&format!(
            "check,read,0,{},1,/data/ior.test.00000001,4097\n",
            32 * MIB
        )),
        "{csv}"
    );
    let text = String::from_utf8(IorTextExporter { info }.render(&rs).unwrap()).unwrap();
    assert!(
        text.contains("/data/ior.test.00000001 at offset 4097"),
        "{text}"
    );
}

fn md_phase(op: &str, iops: f64) -> PhaseRecord {
    PhaseRecord {
        op: op.into(),
        threads: 2,
        ops: 2000,
        iops,
        elapsed_s: 2000.0 / iops,
        ..Default::default()
    }
}

fn md_info() -> MdtestInfo {
    MdtestInfo {
        mdtest_version: "4.0.0".into(),
        command_line: "mdtest '-n' '1000' '-d' '/data/md' '-F' '-C' '-T' '-r'".into(),
        began: "11/23/2026 00:12:16".into(),
        finished: "11/23/2026 00:12:17".into(),
        tasks: 2,
        path: "/data/md".into(),
        fs: Some(fs()),
        items_all: 2000,
        files: true,
        dirs: false,
        iterations: 1,
        rate_and_time: false,
    }
}

#[test]
fn mdtest_text_is_mdtest_4_0_0s_layout() {
    let rs = record(vec![
        md_phase("create", 16573.134),
        md_phase("stat", 175548.980),
        md_phase("delete", 63635.390),
    ]);
    let got = MdtestTextExporter { info: md_info() }.render(&rs).unwrap();
    same(
        &String::from_utf8(got).unwrap(),
        &golden("mdtest-4.0.0.txt"),
    );
}

#[test]
fn mdtest_directory_rows_include_rename_and_the_nodemap_follows_hosts() {
    let mut rs = record(vec![md_phase("mkdir", 100.0), md_phase("rmdir", 50.0)]);
    rs.host.cluster = Some(ClusterInfo {
        launcher: "mpi".into(),
        ranks: 2,
        threads_per_rank: 2,
        nodes: 2,
        tasks_per_node: 1,
        hosts: vec!["a".into(), "b".into()],
        node_phases: vec![],
        ..Default::default()
    });
    let info = MdtestInfo {
        tasks: 4,
        files: false,
        dirs: true,
        ..md_info()
    };
    let t = String::from_utf8(MdtestTextExporter { info }.render(&rs).unwrap()).unwrap();
    assert!(
        t.contains("\nmdtest-4.0.0 was launched with 4 total task(s) on 2 node(s)\n"),
        "{t}"
    );
    assert!(t.contains("\nNodemap: 1100\n"), "{t}");
    let rows: Vec<&str> = t
        .lines()
        .filter(|l| l.starts_with("   Directory"))
        .map(|l| l[3..21].trim_end())
        .collect();
    assert_eq!(
        rows,
        [
            "Directory creation",
            "Directory stat",
            "Directory rename",
            "Directory removal"
        ]
    );
    assert!(!t.contains("File creation"), "{t}");
}

#[test]
fn smallfile_text_is_smallfile_1_1s_layout_with_the_honest_headline() {
    let thread = |t: u32, files: u64, elapsed: f64| ThreadFiles {
        thread: t,
        files,
        records: files,
        elapsed_s: elapsed,
        status: "ok".into(),
        stonewall_files: files,
        stonewall_bytes: files * 4096,
        stonewall_s: elapsed,
        matched: None,
    };
    let (e0, e1) = (1.8013365268707275, 1.7552926540374756);
    let p = PhaseRecord {
        op: "create".into(),
        threads: 2,
        ops: 3979,
        bytes: 3979 * 4096,
        write_bytes: 3979 * 4096,
        elapsed_s: e0,
        files: Some(FilesRecord {
            requested: 4000,
            processed: 3979,
            records: 3979,
            threads: vec![thread(0, 1979, e0), thread(1, 2000, e1)],
            ..Default::default()
        }),
        workers: vec![
            WorkerRecord {
                worker: 0,
                bytes: 1979 * 4096,
                start_s: 0.0,
                end_s: e0,
                ..Default::default()
            },
            WorkerRecord {
                worker: 1,
                bytes: 2000 * 4096,
                start_s: 0.01,
                end_s: 0.01 + e1,
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let got = SmallfileTextExporter {
        info: SmallfileInfo {
            host: "vm".into(),
            response_times: false,
            stonewall: true,
        },
    }
    .render(&record(vec![p]))
    .unwrap();
    same(
        &String::from_utf8(got).unwrap(),
        &golden("smallfile-1.1.txt"),
    );
}
