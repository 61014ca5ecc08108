//! io500's `.ini` configuration: the options that shape these phases.
//!
//! The file is read as io500 reads it (`[section]`, `key = value`, `#` and
//! `;` comments, TRUE/FALSE booleans, IOR sizes such as `2m`), so an
//! existing config runs unchanged. An option ioscale does not support is
//! an error naming the section, the option and the line — never ignored.
//! Defaults are io500's (see shared/reference-outputs/io500-phases.txt §9).

use std::collections::BTreeMap;
use std::path::PathBuf;

use spec::{parse_count, parse_size};

/// What a run is configured to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `[global] datadir`: where the phases' files go.
    pub datadir: PathBuf,
    /// `[global] timestamp-datadir`: append a `YYYY.MM.DD-HH.MM.SS` directory.
    pub timestamp_datadir: bool,
    /// `[global] resultdir`: where result.txt and each phase's output go.
    pub resultdir: PathBuf,
    /// `[global] timestamp-resultdir`.
    pub timestamp_resultdir: bool,
    /// `[global] drop-caches`: drop the page cache before each phase.
    pub drop_caches: bool,
    /// `[global] scc`: the student cluster competition's 30 s minimum.
    pub scc: bool,
    /// `[debug] stonewall-time`, seconds.
    pub stonewall_s: u64,
    /// `[ior-easy] transferSize`.
    pub easy_xfer: u64,
    /// `[ior-easy] blockSize`.
    pub easy_block: u64,
    /// `[ior-easy] filePerProc`.
    pub easy_fpp: bool,
    /// `[ior-easy] uniqueDir`.
    pub easy_unique_dir: bool,
    /// `[ior-hard] segmentCount`.
    pub hard_segments: u64,
    /// `[mdtest-easy] n`: files per task.
    pub md_easy_n: u64,
    /// `[mdtest-hard] n`: files per task.
    pub md_hard_n: u64,
    /// `[ior-rnd4K] blockSize`.
    pub rnd4k_block: u64,
    /// `[ior-rnd1MB] blockSize`.
    pub rnd1mb_block: u64,
    /// `run = FALSE` by section (a sub-section such as `ior-easy-write`
    /// wins over its family's section).
    pub run: BTreeMap<String, bool>,
    /// Notes for standard error: options accepted that change nothing here.
    pub notes: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            datadir: PathBuf::from("./datafiles"),
            timestamp_datadir: true,
            resultdir: PathBuf::from("./results"),
            timestamp_resultdir: true,
            drop_caches: false,
            scc: false,
            stonewall_s: 300,
            easy_xfer: 2 << 20,
            easy_block: 9_920_000 << 20,
            easy_fpp: true,
            easy_unique_dir: false,
            hard_segments: 10_000_000,
            md_easy_n: 1_000_000,
            md_hard_n: 1_000_000,
            rnd4k_block: 1 << 30,
            rnd1mb_block: 1 << 30,
            run: BTreeMap::new(),
            notes: Vec::new(),
        }
    }
}

impl Config {
    /// Whether a phase runs: its sub-section's `run`, else its family's, else TRUE.
    pub fn runs(&self, sub: &str, section: &str) -> bool {
        self.run
            .get(sub)
            .or_else(|| self.run.get(section))
            .copied()
            .unwrap_or(true)
    }
    /// The minimum stonewall the rules require: 300 s, 30 s with scc.
    pub fn required_stonewall(&self) -> u64 {
        if self.scc {
            30
        } else {
            300
        }
    }
}

/// Sections io500 isc26_v2 knows; anything else is refused.
const SECTIONS: &[&str] = &[
    "global",
    "debug",
    "ior-easy",
    "ior-easy-write",
    "ior-easy-read",
    "mdtest-easy",
    "mdtest-easy-write",
    "mdtest-easy-stat",
    "mdtest-easy-delete",
    "timestamp",
    "ior-hard",
    "ior-hard-write",
    "ior-hard-read",
    "mdtest-hard",
    "mdtest-hard-write",
    "mdtest-hard-stat",
    "mdtest-hard-read",
    "mdtest-hard-delete",
    "find",
    "find-easy",
    "find-hard",
    "ior-rnd4K",
    "ior-rnd4K-write",
    "ior-rnd4K-read",
    "ior-rnd1MB",
    "ior-rnd1MB-write",
    "ior-rnd1MB-read",
    "ior-rnd4K-easy-read",
    "mdworkbench",
    "mdworkbench-create",
    "mdworkbench-bench",
    "mdworkbench-delete",
];

fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Parses an io500 `.ini` text onto io500's defaults. `name` is the
/// file's name for messages.
pub fn parse(name: &str, text: &str) -> Result<Config, String> {
    let mut c = Config::default();
    let mut section = String::new();
    for (n, raw) in text.lines().enumerate() {
        let at = format!("{name}:{}", n + 1);
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[') {
            let s = s
                .strip_suffix(']')
                .ok_or_else(|| format!("{at}: `{line}`: a section header ends with ]"))?
                .trim();
            if !SECTIONS.contains(&s) {
                return Err(format!(
                    "{at}: [{s}]: not a section of io500 isc26_v2 (see docs/io500.md for the sections ioscale reads)"
                ));
            }
            section = s.to_string();
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| format!("{at}: `{line}`: expected key = value"))?;
        let (k, v) = (k.trim(), v.trim());
        if section.is_empty() {
            return Err(format!("{at}: {k}: outside any [section]"));
        }
        apply(&mut c, &section, k, v).map_err(|e| format!("{at}: [{section}] {k}: {e}"))?;
    }
    Ok(c)
}

fn apply(c: &mut Config, section: &str, k: &str, v: &str) -> Result<(), String> {
    let flag = || boolean(v).ok_or_else(|| format!("`{v}` is not TRUE or FALSE"));
    let size = || parse_size(v).map_err(|e| format!("`{v}`: {e}"));
    let count = || parse_count(v).map_err(|e| format!("`{v}`: {e}"));
    let family = section
        .trim_end_matches("-write")
        .trim_end_matches("-read")
        .trim_end_matches("-stat")
        .trim_end_matches("-delete");
    match (section, k) {
        ("global", "datadir") if !v.is_empty() => c.datadir = PathBuf::from(v),
        ("global", "resultdir") if !v.is_empty() => c.resultdir = PathBuf::from(v),
        ("global", "timestamp-datadir") => c.timestamp_datadir = flag()?,
        ("global", "timestamp-resultdir") => c.timestamp_resultdir = flag()?,
        ("global", "drop-caches") => c.drop_caches = flag()?,
        ("global", "scc") => c.scc = flag()?,
        ("global", "verbosity") => {
            count()?;
        }
        ("global", "io-buffers-on-gpu") => {
            if flag()? {
                return Err("GPU buffers are not supported (ioscale's buffers are host memory); use FALSE".into());
            }
        }
        ("global", "dataPacketType") => {
            if v != "timestamp" {
                return Err(format!(
                    "`{v}`: not supported: ioscale writes its own offset-encoding pattern (which the reads check, \
                     as io500's -R does); use the default, timestamp"
                ));
            }
        }
        ("global", "drop-caches-cmd") => {
            return Err(
                "not supported: ioscale drops the page cache itself (/proc/sys/vm/drop_caches, as root) \
                 with drop-caches = TRUE"
                    .into(),
            )
        }
        ("debug", "stonewall-time") => c.stonewall_s = count()?,
        ("debug", "pause-dir") => {
            return Err("not supported: ioscale does not pause between phases (and io500 marks such a run invalid)".into())
        }
        (_, "API") | ("global", "api") => {
            let words: Vec<&str> = v.split_whitespace().collect();
            if words.first().is_some_and(|w| *w != "POSIX") || words.len() > 1 {
                return Err(format!(
                    "`{v}`: only POSIX (without module options) is supported: ioscale issues POSIX I/O"
                ));
            }
        }
        (_, "run") if section != "global" && section != "debug" => {
            c.run.insert(section.to_string(), flag()?);
        }
        (_, "verbosity") if family.starts_with("ior-") => {
            count()?;
        }
        ("ior-easy", "transferSize") => c.easy_xfer = size()?,
        ("ior-easy", "blockSize") => c.easy_block = size()?,
        ("ior-easy", "filePerProc") => c.easy_fpp = flag()?,
        ("ior-easy", "uniqueDir") => c.easy_unique_dir = flag()?,
        ("ior-hard", "segmentCount") => c.hard_segments = count()?,
        ("ior-hard", "collective") => {
            if flag()? {
                return Err("collective MPI-IO is not supported: ioscale issues independent POSIX I/O; use FALSE".into());
            }
        }
        ("mdtest-easy", "n") => c.md_easy_n = count()?,
        ("mdtest-hard", "n") => c.md_hard_n = count()?,
        ("mdtest-hard", "files-per-dir") => {
            return Err("not supported (a debug option that makes io500 runs invalid): all files go in one directory".into())
        }
        ("ior-rnd4K", "blockSize") => c.rnd4k_block = size()?,
        ("ior-rnd1MB", "blockSize") => c.rnd1mb_block = size()?,
        ("ior-rnd4K" | "ior-rnd1MB", "randomPrefill") => {
            if count()? != 0 {
                return Err("a random prefill is not supported; use 0".into());
            }
        }
        ("find" | "find-easy" | "find-hard", "pfind-queue-length" | "pfind-steal-next" | "pfind-parallelize-single-dir-access-using-hashing") => {
            c.notes.push(format!(
                "[{section}] {k}: pfind's work-queue tuning has no counterpart in ioscale's find (each task takes \
                 its share of every directory's entries); accepted, changes nothing"
            ));
        }
        ("find" | "find-easy" | "find-hard", "external-script" | "external-mpi-args" | "external-extra-args" | "nproc") => {
            if !v.is_empty() {
                return Err("not supported: ioscale's find runs on every task; leave it empty".into());
            }
        }
        _ => {
            return Err(
                "not an option ioscale's io500 supports (docs/io500.md lists the options it reads)".into(),
            )
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_io500_config() {
        let c = parse(
            "t.ini",
            "# comment\n[global]\ndatadir = /d\nresultdir=/r\ntimestamp-datadir = FALSE\n\
             [debug]\nstonewall-time = 2\n[ior-easy]\nAPI = POSIX\ntransferSize = 1m\nblockSize = 8m\n\
             [ior-hard]\nsegmentCount = 10\n[mdtest-easy]\nn = 100\n[mdtest-hard]\nn=50\n\
             [ior-easy-read]\nrun = FALSE\n",
        )
        .unwrap();
        assert_eq!(c.datadir, PathBuf::from("/d"));
        assert_eq!(c.resultdir, PathBuf::from("/r"));
        assert!(!c.timestamp_datadir && c.timestamp_resultdir);
        assert_eq!(
            (c.stonewall_s, c.easy_xfer, c.easy_block),
            (2, 1 << 20, 8 << 20)
        );
        assert_eq!((c.hard_segments, c.md_easy_n, c.md_hard_n), (10, 100, 50));
        assert!(!c.runs("ior-easy-read", "ior-easy"));
        assert!(c.runs("ior-easy-write", "ior-easy"));
    }

    #[test]
    fn an_unsupported_option_is_named() {
        let e = parse("t.ini", "[ior-easy]\nfoo = 1\n").unwrap_err();
        assert!(e.contains("t.ini:2") && e.contains("[ior-easy] foo"), "{e}");
        let e = parse("t.ini", "[global]\napi = MPIIO\n").unwrap_err();
        assert!(e.contains("api") && e.contains("POSIX"), "{e}");
        let e = parse("t.ini", "[nonsense]\n").unwrap_err();
        assert!(e.contains("[nonsense]"), "{e}");
        let e = parse("t.ini", "[ior-hard]\ncollective = TRUE\n").unwrap_err();
        assert!(e.contains("collective"), "{e}");
    }
}
