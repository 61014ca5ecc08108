//! How a command runs as the ranks of its launch: MPI brought up (or one
//! process alone), every rank ending with rank 0's exit code and a failure
//! said once; the interrupt handler; and the output checks every rank
//! agrees on before a run.
//!
//! Every command that runs a workload (`run`, `meta`, `sweep`, the
//! front-ends) starts through here, so it sits below all of them.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::exit::{Exit, Failure};
use crate::output::check_output_set;

/// A failure found before MPI is up, the same on every task of the
/// launch: task 0 alone says it (see [`launched_as_rank_0`]).
pub(crate) fn said_by_rank_0(f: Failure) -> Failure {
    if launched_as_rank_0() {
        f
    } else {
        Failure::Said(f.code())
    }
}

/// Whether this process is rank 0 of its launch (or was not launched as
/// one of several tasks), read from the launcher's environment: before MPI
/// is up, or when it cannot come up, only the launcher says which task
/// this is. A launch error is the same on every task, so task 0 alone
/// prints it instead of N copies.
pub(crate) fn launched_as_rank_0() -> bool {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok())
    .is_none_or(|r| r.trim() == "0")
}

/// Runs a command as one rank of its launch (the only one when started
/// alone; see [`coord::init`]): every rank exits with rank 0's exit code,
/// and MPI is finalised before the process exits. `body` makes the same
/// collective calls on every rank whatever happens, and prints only on
/// rank 0; a [`Failure`] it returns is said by rank 0 alone, as `tool`
/// (`ioscale`, `ior`, …): by `main` when it runs alone, and before the
/// ranks part when there are several — a launcher that sees another rank
/// exit non-zero may kill rank 0 before `main` would have said it.
pub(crate) fn as_ranks(tool: &str, body: impl FnOnce(&dyn coord::Coordinator) -> Exit) -> Exit {
    let coord = coord::init().map_err(|e| said_by_rank_0(Failure::refused(e)))?;
    let result = body(&*coord);
    // The command is over (outputs written, files removed); a stop signal
    // that came until now still decides the exit code, on rank 0 before
    // every rank takes it.
    bench::cluster::test_freeze(&*coord, "done");
    let result = crate::exit::settle(result);
    let result = if coord.size() > 1 {
        let result = match rank_0s(&*coord, result) {
            Err(f) if coord.rank() == 0 && !matches!(f, Failure::Said(_)) => {
                Err(Failure::Said(f.report(tool)))
            }
            other => other,
        };
        // MPI_Finalize waits for every rank without a limit: a rank that
        // stopped answering after its last phase would hang the job there.
        // Meeting once more within the coordinator's limit names it.
        bench::cluster::test_freeze(&*coord, "exit");
        if let Err(e) = coord.barrier_within(None) {
            bench::cluster::give_up(&*coord, &e)
        }
        result
    } else {
        result
    };
    // Dropping the coordinator finalises MPI.
    drop(coord);
    result
}

/// Rank 0's result on every rank (a collective call): rank 0 keeps its
/// own; another rank takes its code, and is silent when it is a failure
/// (rank 0 says why).
fn rank_0s(coord: &dyn coord::Coordinator, result: Exit) -> Exit {
    let mine = match &result {
        Ok(code) => (false, *code),
        Err(f) => (true, f.code()),
    };
    let (failed, code) = coord.broadcast_as(&mine).unwrap_or(mine);
    if coord.rank() == 0 {
        result
    } else if failed {
        Err(Failure::Said(code))
    } else {
        Ok(code)
    }
}

/// Checks the `--json`/`--csv` paths on rank 0 and agrees on the outcome:
/// a failure on every rank when one is bad (rank 0's says which).
pub(crate) fn check_outputs(
    coord: &dyn coord::Coordinator,
    outputs: &[(&str, Option<&Path>)],
) -> Result<(), Failure> {
    check_outputs_beside(coord, outputs, &[])
}

/// [`check_outputs`] for a run that reads or writes the user's own files
/// `data` (each with the operand that names it, `if=`): an output naming
/// one of them is refused too.
pub(crate) fn check_outputs_beside(
    coord: &dyn coord::Coordinator,
    outputs: &[(&str, Option<&Path>)],
    data: &[(&str, &Path)],
) -> Result<(), Failure> {
    let bad = if coord.rank() == 0 {
        check_output_set(outputs, data)
    } else {
        Ok(())
    };
    bench::cluster::root_check(coord, bad).map_err(|e| match e {
        Some(e) => Failure::refused(format!("{e:#}")),
        None => Failure::Said(2),
    })
}

/// Installs the stop-signal handlers (SIGINT, SIGTERM, SIGHUP; see
/// [`crate::signals`]) and returns the stop flag: the first signal asks
/// the run to stop and keep its results.
pub(crate) fn install_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let first = crate::signals::stop_flag().is_none();
    let stop = crate::signals::install()?;
    if first && launched_as_rank_0() {
        bench::cluster::test_freeze_rank(0, "signals");
    }
    // A wait for another process's lock on the results history ends too.
    history::wait::stop_waiting_on(&stop);
    Ok(stop)
}
