//! Reading how a process was launched, and refusing the wrong launches.
//!
//! The classic mistake: `srun -n 4 ioscale …` with an MPI library that
//! cannot talk to Slurm's PMI, so each of the 4 processes initialises MPI
//! alone, believes it is rank 0 of 1, and 4 independent runs overwrite
//! each other's files and report a quarter of the truth each. The
//! launchers leave their task count in the environment, so such a launch
//! can be recognised and explained instead.

/// What the environment says about the launch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchEnv {
    /// `OMPI_COMM_WORLD_SIZE`: started by Open MPI's mpirun.
    pub ompi_size: Option<u32>,
    /// `PMI_SIZE`: a PMI-1/PMI-2 launcher (MPICH's hydra, `srun --mpi=pmi2`).
    pub pmi_size: Option<u32>,
    /// `PMIX_RANK` is set: a PMIx launcher (`srun --mpi=pmix`, prterun).
    pub pmix: bool,
    /// `SLURM_STEP_NUM_TASKS`, inside an srun step (`SLURM_STEP_ID` set).
    pub slurm_step_tasks: Option<u32>,
    /// `SLURM_NTASKS` of the job, when not inside an srun step.
    pub slurm_job_tasks: Option<u32>,
    /// `SLURM_MPI_TYPE`: the PMI srun offered (`none`, `pmi2`, `pmix`).
    pub slurm_mpi_type: Option<String>,
    /// `IOSCALE_ALLOW_SOLO=1`: run one process even in a multi-task job.
    pub allow_solo: bool,
}

/// A launch that would not give the run the user asked for (exit code 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchError {
    /// Started as one of several tasks by a binary built without MPI.
    NoMpiBuild {
        /// Tasks the launcher started.
        tasks: u32,
        /// Which variable said so.
        source: &'static str,
    },
    /// srun started several tasks without a PMI the MPI library can use.
    NoPmi {
        /// Tasks in the step.
        tasks: u32,
        /// `SLURM_MPI_TYPE`, if set.
        mpi_type: Option<String>,
    },
    /// A PMI-1/PMI-2 launch (`srun --mpi=pmi2`) of an Open MPI built
    /// without support for it (Debian's joins Slurm through PMIx only).
    NoPmi2 {
        /// `PMI_SIZE`.
        tasks: u32,
    },
    /// MPI came up with a different world than the launcher started.
    WorldMismatch {
        /// Ranks MPI sees.
        world: u32,
        /// Tasks the launcher started.
        tasks: u32,
        /// Which variable said so.
        source: &'static str,
    },
    /// A Slurm job of several tasks ran ioscale once, without srun/mpirun.
    NotLaunched {
        /// `SLURM_NTASKS`.
        tasks: u32,
    },
    /// MPI_Init failed or MPI was initialised already.
    MpiInit,
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchError::NoMpiBuild { tasks, source } => write!(
                f,
                "this process is one of {tasks} tasks ({source}={tasks}) but this ioscale was built \
                 without MPI, so the tasks would run {tasks} separate benchmarks on the same files. \
                 Rebuild with `cargo build --release --features mpi` (see docs/cluster.md), or run \
                 one process with --threads N"
            ),
            LaunchError::NoPmi { tasks, mpi_type } => write!(
                f,
                "srun started {tasks} tasks (SLURM_STEP_NUM_TASKS={tasks}) without a PMI the MPI \
                 library can use (SLURM_MPI_TYPE={}): each task would be rank 0 of 1. \
                 Use `srun --mpi=pmix` (see `srun --mpi=list`), set MpiDefault=pmix in slurm.conf, \
                 or start the ranks with mpirun inside the allocation",
                mpi_type.as_deref().unwrap_or("unset")
            ),
            LaunchError::NoPmi2 { tasks } => write!(
                f,
                "the launcher started {tasks} tasks through PMI-1/PMI-2 (PMI_SIZE={tasks}, e.g. \
                 `srun --mpi=pmi2`), but the Open MPI ioscale was built with has no PMI-2 support \
                 (it joins Slurm through PMIx only), so MPI_Init would abort. Use \
                 `srun --mpi=pmix` (check `srun --mpi=list`), or mpirun inside the allocation"
            ),
            LaunchError::WorldMismatch {
                world,
                tasks,
                source,
            } => write!(
                f,
                "MPI sees {world} rank(s) but the launcher started {tasks} tasks ({source}={tasks}): \
                 the MPI library ioscale was built with cannot talk to this launcher's PMI, so every \
                 task came up alone. Under Slurm use `srun --mpi=pmix` (check `srun --mpi=list`) or \
                 mpirun from the same MPI that ioscale was built with; with mpirun, use the mpirun of \
                 that MPI (`ldd $(which ioscale) | grep mpi`)"
            ),
            LaunchError::NotLaunched { tasks } => write!(
                f,
                "this Slurm job has {tasks} tasks (SLURM_NTASKS={tasks}) but ioscale was started \
                 once, not by srun or mpirun: start it as `srun ioscale …` (or `mpirun ioscale …`) \
                 so each task becomes a rank, or set IOSCALE_ALLOW_SOLO=1 to run one process"
            ),
            LaunchError::MpiInit => f.write_str(
                "MPI_Init failed (or MPI was initialised twice); check the MPI installation with \
                 `mpirun -np 2 hostname`",
            ),
        }
    }
}

impl std::error::Error for LaunchError {}

/// Reads the launch from environment variables through `var`.
pub fn detect(var: impl Fn(&str) -> Option<String>) -> LaunchEnv {
    let num = |k: &str| var(k).and_then(|v| v.trim().parse::<u32>().ok());
    let in_step = var("SLURM_STEP_ID").is_some();
    LaunchEnv {
        ompi_size: num("OMPI_COMM_WORLD_SIZE"),
        pmi_size: num("PMI_SIZE"),
        pmix: var("PMIX_RANK").is_some(),
        slurm_step_tasks: if in_step {
            num("SLURM_STEP_NUM_TASKS")
        } else {
            None
        },
        slurm_job_tasks: if in_step || var("SLURM_JOB_ID").is_none() {
            None
        } else {
            num("SLURM_NTASKS")
        },
        slurm_mpi_type: var("SLURM_MPI_TYPE"),
        allow_solo: var("IOSCALE_ALLOW_SOLO").is_some_and(|v| v == "1"),
    }
}

impl LaunchEnv {
    /// Whether a launcher that MPI can join started this process.
    pub fn wants_mpi(&self) -> bool {
        self.ompi_size.is_some() || self.pmi_size.is_some() || self.pmix
    }

    /// The task count the launcher reported, and the variable it came from.
    pub fn launcher_tasks(&self) -> Option<(u32, &'static str)> {
        self.ompi_size
            .map(|n| (n, "OMPI_COMM_WORLD_SIZE"))
            .or(self.pmi_size.map(|n| (n, "PMI_SIZE")))
            .or(self.slurm_step_tasks.map(|n| (n, "SLURM_STEP_NUM_TASKS")))
    }

    /// Refuses launches that cannot work, before MPI is initialised
    /// (Open MPI aborts in MPI_Init on some of them, with a less direct
    /// message).
    pub fn check_before_init(&self, has_mpi: bool) -> Result<(), LaunchError> {
        if let Some((tasks, source)) = self.launcher_tasks() {
            if tasks > 1 && !has_mpi {
                return Err(LaunchError::NoMpiBuild { tasks, source });
            }
        }
        if let Some(tasks) = self.slurm_step_tasks {
            if tasks > 1 && has_mpi && !self.wants_mpi() {
                return Err(LaunchError::NoPmi {
                    tasks,
                    mpi_type: self.slurm_mpi_type.clone(),
                });
            }
        }
        if let Some(tasks) = self.slurm_job_tasks {
            if tasks > 1 && !self.wants_mpi() && !self.allow_solo {
                return Err(LaunchError::NotLaunched { tasks });
            }
        }
        Ok(())
    }

    /// Checks the world MPI came up with against the launcher's count.
    pub fn check_world(&self, world: u32) -> Result<(), LaunchError> {
        match self.launcher_tasks() {
            Some((tasks, source)) if tasks != world => Err(LaunchError::WorldMismatch {
                world,
                tasks,
                source,
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> LaunchEnv {
        let v: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        detect(|k| v.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone()))
    }

    #[test]
    fn plain_process_is_solo() {
        let e = env(&[]);
        assert!(!e.wants_mpi());
        assert_eq!(e.check_before_init(false), Ok(()));
        assert_eq!(e.check_before_init(true), Ok(()));
    }

    #[test]
    fn mpirun_of_a_build_without_mpi_is_refused() {
        let e = env(&[("OMPI_COMM_WORLD_SIZE", "4"), ("PMIX_RANK", "0")]);
        let err = e.check_before_init(false).unwrap_err();
        assert!(err.to_string().contains("built without MPI"), "{err}");
        assert_eq!(e.check_before_init(true), Ok(()));
        assert!(e.wants_mpi());
    }

    #[test]
    fn world_of_one_under_four_tasks_is_explained() {
        let e = env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_STEP_NUM_TASKS", "4"),
            ("SLURM_NTASKS", "4"),
            ("PMI_SIZE", "4"),
        ]);
        let err = e.check_world(1).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("MPI sees 1 rank(s)"), "{text}");
        assert!(text.contains("srun --mpi=pmix"), "{text}");
        assert_eq!(e.check_world(4), Ok(()));
    }

    #[test]
    fn srun_without_pmi_is_refused_before_init() {
        let e = env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_STEP_NUM_TASKS", "4"),
            ("SLURM_MPI_TYPE", "none"),
        ]);
        let err = e.check_before_init(true).unwrap_err();
        assert!(err.to_string().contains("SLURM_MPI_TYPE=none"), "{err}");
        // A single-task step runs alone without MPI.
        let one = env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_STEP_NUM_TASKS", "1"),
        ]);
        assert_eq!(one.check_before_init(true), Ok(()));
    }

    #[test]
    fn batch_script_without_srun_is_refused_unless_allowed() {
        let e = env(&[("SLURM_JOB_ID", "7"), ("SLURM_NTASKS", "4")]);
        assert!(matches!(
            e.check_before_init(true),
            Err(LaunchError::NotLaunched { tasks: 4 })
        ));
        let ok = env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_NTASKS", "4"),
            ("IOSCALE_ALLOW_SOLO", "1"),
        ]);
        assert_eq!(ok.check_before_init(true), Ok(()));
        // mpirun inside the batch script: the ranks carry Open MPI's variables.
        let mpirun = env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_NTASKS", "4"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
        ]);
        assert_eq!(mpirun.check_before_init(true), Ok(()));
    }
}
