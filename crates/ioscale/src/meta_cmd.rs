//! `ioscale meta`: argv's typed flags → a plan of one metadata step →
//! [`bench::exec::execute`] → output, as one rank of an MPI launch when
//! started by mpirun or srun.

use coord::Coordinator;

use crate::exit::{Exit, Failure};
use crate::job::MetaArgs;

/// `ioscale meta`: parse, run, emit; as one rank of an MPI launch when
/// started by mpirun or srun (rank 0 alone prints and writes).
pub fn cmd_meta(args: &MetaArgs) -> Exit {
    crate::launch::as_ranks("ioscale", |coord| meta_ranks(args, coord))
}

fn meta_ranks(args: &MetaArgs, coord: &dyn Coordinator) -> Exit {
    let root = coord.rank() == 0;
    let spec = args
        .to_raw()
        .map_err(Failure::usage)?
        .build()
        .map_err(Failure::usage)?;
    let interval = args.record.over_time.interval().map_err(Failure::usage)?;
    let mut opts = crate::job::run_options(args.per_worker, interval);
    opts.steady = (args.record.over_time)
        .steady(spec.time_limit, coord.size())
        .map_err(Failure::usage)?;
    let outputs = [
        ("--json", args.record.json.as_deref()),
        ("--csv", args.record.csv.as_deref()),
        ("--series-csv", args.record.over_time.series_csv.as_deref()),
    ];
    crate::launch::check_outputs(coord, &outputs)?;
    let history = crate::history_run::Session::new(Some(&args.history), "ioscale", "meta", root)?;
    let stop = crate::launch::install_signals()?;
    let command: Vec<String> = std::env::args().collect();
    // An interrupted run's record is saved before its tree is removed: a
    // second Ctrl-C then cuts the cleanup short, never the record.
    let mut early = crate::output::EarlySave::new(
        args.record.json.as_deref(),
        args.record.csv.as_deref(),
        "the tree",
    );
    let plan = bench::plan::Plan::single(spec).with_options(opts);
    let live = crate::front::live_plan(args.shown.progress, root, &plan, coord.size());
    let mut hooks = bench::exec::OnCleanup(|rs: &report::ResultSet| early.save(rs));
    let env = bench::exec::Env::new(command, stop, coord).with_hooks(&mut hooks);
    let outcome = bench::exec::execute(&plan, env);
    drop(live);
    let outcome = outcome?.into_single();
    if !root {
        return Ok(outcome.exit_code());
    }
    let (json, csv) = if early.saved {
        (None, None)
    } else {
        (args.record.json.as_deref(), args.record.csv.as_deref())
    };
    let series_csv = args.record.over_time.series_csv.as_deref();
    let code = crate::emit::emit(
        &outcome,
        [json, csv, series_csv],
        args.shown.format,
        args.shown.quiet,
    )?;
    Ok(history.finish_with(&outcome.results, code))
}
