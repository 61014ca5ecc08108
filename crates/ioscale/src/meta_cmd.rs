//! `ioscale meta`: argv's typed flags → [`bench::meta::run_with`] → output,
//! as one rank of an MPI launch when started by mpirun or srun.

use coord::Coordinator;

use crate::cli::MetaArgs;

/// `ioscale meta`: parse, run, emit; as one rank of an MPI launch when
/// started by mpirun or srun (rank 0 alone prints and writes).
pub fn cmd_meta(args: &MetaArgs) -> anyhow::Result<i32> {
    crate::as_ranks("ioscale", |coord| meta_ranks(args, coord))
}

fn meta_ranks(args: &MetaArgs, coord: &dyn Coordinator) -> anyhow::Result<i32> {
    let root = coord.rank() == 0;
    let built = args
        .to_raw()
        .map_err(|e| e.to_string())
        .and_then(|raw| raw.build().map_err(|e| e.to_string()));
    let spec = match built {
        Ok(s) => s,
        Err(e) => {
            if root {
                eprintln!("ioscale: error: {e}");
            }
            return Ok(2);
        }
    };
    let outputs = [
        ("--json", args.json.as_deref()),
        ("--csv", args.csv.as_deref()),
    ];
    if let Some(code) = crate::check_outputs(coord, "ioscale", &outputs) {
        return Ok(code);
    }
    let stop = crate::install_signals()?;
    let command: Vec<String> = std::env::args().collect();
    // An interrupted run's record is saved before its tree is removed: a
    // second Ctrl-C then cuts the cleanup short, never the record.
    let mut early =
        crate::output::EarlySave::new(args.json.as_deref(), args.csv.as_deref(), "the tree");
    let mut save_early = |rs: &report::ResultSet| early.save(rs);
    let live = root
        .then(|| {
            crate::progress::Display::start(args.progress, spec.reps, spec.ops.len(), coord.size())
        })
        .flatten();
    let outcome = bench::meta::run_with_hook(
        &spec,
        command,
        stop,
        coord,
        bench::run::Options {
            node_summary: !args.per_worker,
            ..Default::default()
        },
        &mut save_early,
    );
    drop(live);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            if root {
                eprintln!("ioscale: error: {e}");
            }
            return Ok(e.exit_code());
        }
    };
    if !root {
        return Ok(outcome.exit_code());
    }
    let (json, csv) = if early.saved {
        (None, None)
    } else {
        (args.json.as_deref(), args.csv.as_deref())
    };
    crate::emit(&outcome, json, csv, args.format, args.quiet)
}
