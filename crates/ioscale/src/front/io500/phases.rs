//! The IO500 phase table: the order io500 (tag io500-isc26_v2) runs its
//! phases in, which score group each belongs to, and which of them are
//! write phases whose runtime the rules check against the stonewall.

/// Where a phase's figure goes in the score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Bandwidth: GiB/s, geometric mean of the IOR phases.
    Bw,
    /// Metadata: kIOPS, geometric mean of the mdtest and find phases.
    Md,
    /// Printed, never scored (timestamp, ior-rnd4K-easy-read).
    None,
}

/// What a phase does, i.e. which worker body runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// ior-easy: a file per task, large sequential transfers.
    IorEasy,
    /// ior-hard: one shared file, 47,008-byte interleaved transfers.
    IorHard,
    /// ior-rnd4K / ior-rnd1MB: shuffled transfers in one shared file.
    IorRnd { xfer: u64 },
    /// ior-rnd4K-easy-read: 4 KiB reads at random offsets of ior-easy's files.
    IorRndEasyRead,
    /// mdtest-easy: empty files, a directory per task.
    MdEasy,
    /// mdtest-hard: 3,901-byte files in one shared directory.
    MdHard,
    /// The timestamp file that find's `-newer` compares with.
    Timestamp,
    /// A parallel find over the data directory (or one phase's part).
    Find { scope: FindScope },
}

/// Which part of the data directory a find phase walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindScope {
    /// `find`: the whole data directory, `-newer` the timestamp, 3901 bytes, `*01*`.
    All,
    /// `find-easy` (extended): mdtest-easy's tree, `*01*` only.
    Easy,
    /// `find-hard` (extended): mdtest-hard's tree, as `find`.
    Hard,
}

/// The step of a phase family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Creates data (write / create), runs until the stonewall.
    Write,
    /// Reads back everything the write made.
    Read,
    /// Stats every file the write made.
    Stat,
    /// Removes every file the write made.
    Delete,
    /// Neither (timestamp, find).
    Other,
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    /// io500's name, as printed in `[RESULT]` lines and result.txt.
    pub name: &'static str,
    /// The ini section whose `run` and sizes apply (`ior-easy`).
    pub section: &'static str,
    /// Its family and worker body.
    pub kind: Kind,
    /// What it does with the family's files.
    pub step: Step,
    /// Its score group.
    pub group: Group,
    /// Runs only with `--mode=extended`; its score goes to `[SCOREX]` only.
    pub optional: bool,
}

impl Phase {
    /// Write phases have their runtime checked against the stonewall.
    pub fn checks_runtime(&self) -> bool {
        self.step == Step::Write
    }
    /// The unit of its score.
    pub fn unit(&self) -> &'static str {
        if self.is_bw() {
            "GiB/s"
        } else {
            "kIOPS"
        }
    }
    /// Whether its score is a bandwidth (an IOR phase).
    pub fn is_bw(&self) -> bool {
        matches!(
            self.kind,
            Kind::IorEasy | Kind::IorHard | Kind::IorRnd { .. } | Kind::IorRndEasyRead
        )
    }
}

const fn p(
    name: &'static str,
    section: &'static str,
    kind: Kind,
    step: Step,
    group: Group,
    optional: bool,
) -> Phase {
    Phase {
        name,
        section,
        kind,
        step,
        group,
        optional,
    }
}

const RND4K: Kind = Kind::IorRnd { xfer: 4096 };
const RND1MB: Kind = Kind::IorRnd { xfer: 1 << 20 };

/// Every phase in io500's order (standard and extended together; the
/// optional ones are skipped in standard mode). md-workbench is not here:
/// ioscale does not run it (see docs/io500.md).
pub const ALL: &[Phase] = &[
    p(
        "ior-easy-write",
        "ior-easy",
        Kind::IorEasy,
        Step::Write,
        Group::Bw,
        false,
    ),
    p(
        "ior-rnd4K-write",
        "ior-rnd4K",
        RND4K,
        Step::Write,
        Group::Bw,
        true,
    ),
    p(
        "mdtest-easy-write",
        "mdtest-easy",
        Kind::MdEasy,
        Step::Write,
        Group::Md,
        false,
    ),
    p(
        "ior-rnd1MB-write",
        "ior-rnd1MB",
        RND1MB,
        Step::Write,
        Group::Bw,
        true,
    ),
    p(
        "timestamp",
        "timestamp",
        Kind::Timestamp,
        Step::Other,
        Group::None,
        false,
    ),
    p(
        "find-easy",
        "find-easy",
        Kind::Find {
            scope: FindScope::Easy,
        },
        Step::Other,
        Group::Md,
        true,
    ),
    p(
        "ior-hard-write",
        "ior-hard",
        Kind::IorHard,
        Step::Write,
        Group::Bw,
        false,
    ),
    p(
        "mdtest-hard-write",
        "mdtest-hard",
        Kind::MdHard,
        Step::Write,
        Group::Md,
        false,
    ),
    p(
        "find",
        "find",
        Kind::Find {
            scope: FindScope::All,
        },
        Step::Other,
        Group::Md,
        false,
    ),
    p(
        "ior-rnd4K-read",
        "ior-rnd4K",
        RND4K,
        Step::Read,
        Group::Bw,
        true,
    ),
    p(
        "ior-rnd1MB-read",
        "ior-rnd1MB",
        RND1MB,
        Step::Read,
        Group::Bw,
        true,
    ),
    p(
        "find-hard",
        "find-hard",
        Kind::Find {
            scope: FindScope::Hard,
        },
        Step::Other,
        Group::Md,
        true,
    ),
    p(
        "ior-easy-read",
        "ior-easy",
        Kind::IorEasy,
        Step::Read,
        Group::Bw,
        false,
    ),
    p(
        "mdtest-easy-stat",
        "mdtest-easy",
        Kind::MdEasy,
        Step::Stat,
        Group::Md,
        false,
    ),
    p(
        "ior-hard-read",
        "ior-hard",
        Kind::IorHard,
        Step::Read,
        Group::Bw,
        false,
    ),
    p(
        "mdtest-hard-stat",
        "mdtest-hard",
        Kind::MdHard,
        Step::Stat,
        Group::Md,
        false,
    ),
    p(
        "mdtest-easy-delete",
        "mdtest-easy",
        Kind::MdEasy,
        Step::Delete,
        Group::Md,
        false,
    ),
    p(
        "mdtest-hard-read",
        "mdtest-hard",
        Kind::MdHard,
        Step::Read,
        Group::Md,
        false,
    ),
    p(
        "mdtest-hard-delete",
        "mdtest-hard",
        Kind::MdHard,
        Step::Delete,
        Group::Md,
        false,
    ),
    p(
        "ior-rnd4K-easy-read",
        "ior-rnd4K-easy-read",
        Kind::IorRndEasyRead,
        Step::Read,
        Group::None,
        false,
    ),
];

/// The phases a run in this mode goes through, in order.
pub fn plan(extended: bool) -> Vec<Phase> {
    ALL.iter()
        .copied()
        .filter(|p| extended || !p.optional)
        .collect()
}

/// The sub-section of a step (`ior-easy-write`), whose `run`/`API` win
/// over the family's.
pub fn sub_section(p: &Phase) -> &'static str {
    p.name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_order_is_io500s() {
        let names: Vec<_> = plan(false).iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "ior-easy-write",
                "mdtest-easy-write",
                "timestamp",
                "ior-hard-write",
                "mdtest-hard-write",
                "find",
                "ior-easy-read",
                "mdtest-easy-stat",
                "ior-hard-read",
                "mdtest-hard-stat",
                "mdtest-easy-delete",
                "mdtest-hard-read",
                "mdtest-hard-delete",
                "ior-rnd4K-easy-read",
            ]
        );
        let bw: Vec<_> = plan(false)
            .into_iter()
            .filter(|p| p.group == Group::Bw)
            .map(|p| p.name)
            .collect();
        assert_eq!(
            bw,
            [
                "ior-easy-write",
                "ior-hard-write",
                "ior-easy-read",
                "ior-hard-read"
            ]
        );
        assert_eq!(
            plan(false).iter().filter(|p| p.group == Group::Md).count(),
            8
        );
    }

    #[test]
    fn extended_adds_the_optional_phases_where_io500_puts_them() {
        let names: Vec<_> = plan(true).iter().map(|p| p.name).collect();
        let at = |n: &str| names.iter().position(|x| *x == n).unwrap();
        assert_eq!(at("ior-rnd4K-write"), at("ior-easy-write") + 1);
        assert_eq!(at("ior-rnd1MB-write"), at("mdtest-easy-write") + 1);
        assert_eq!(at("find-easy"), at("timestamp") + 1);
        assert!(at("find") < at("ior-rnd4K-read") && at("find-hard") < at("ior-easy-read"));
    }
}
