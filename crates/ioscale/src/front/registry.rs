//! Which front-end answers to a name: one line per compatibility
//! front-end (its subcommand, the program name it answers to, its entry),
//! for `main` to find by subcommand or by program name. It names every
//! front-end, so it stands above them; they take what they share from
//! `front/mod.rs`, below them.

use super::{dd, fio, io500, ior, mdtest, smallfile, Call, Front};
use crate::exit::Exit;
use crate::history_run::Session;

/// Runs front-end `F` on every rank of its launch: a usage error is said
/// once (exit 2), `--help` printed once (exit 0), anything else run.
fn drive<F: Front>(prog: &str, args: &[String]) -> Exit {
    crate::launch::as_ranks(F::COMMAND, |coord| {
        let root = coord.rank() == 0;
        match F::parse(args) {
            Err(e) => Err(e.into()),
            Ok(None) => {
                if root {
                    print!("{}", F::HELP);
                }
                Ok(0)
            }
            Ok(Some(req)) => {
                let history = Session::new(None, F::COMMAND, F::COMMAND, root)?;
                let code = F::run(
                    &Call {
                        prog,
                        args,
                        history: &history,
                    },
                    req,
                    coord,
                )?;
                Ok(history.finish(code))
            }
        }
    })
}

/// One line of the registry: the names a front-end answers to and its
/// entry.
pub struct FrontEnd {
    /// The subcommand: `ioscale NAME …`.
    pub command: &'static str,
    /// The program name it answers to when the binary is started under it.
    pub program: &'static str,
    /// The program name its messages show when run as a subcommand.
    pub shown_as: &'static str,
    /// Parses the tool's own syntax, runs, prints in the tool's layout:
    /// the program name to show, then the arguments after it. A failure is
    /// said as `COMMAND: error: …`.
    pub main: fn(&str, &[String]) -> Exit,
}

impl FrontEnd {
    /// The registry line of a [`Front`].
    pub const fn of<F: Front>() -> FrontEnd {
        FrontEnd {
            command: F::COMMAND,
            program: F::PROGRAM,
            shown_as: F::SHOWN_AS,
            main: drive::<F>,
        }
    }
}

/// Every compatibility front-end. fio and io500 have their own entry (they
/// parse job files and run many phases of their own).
pub const REGISTRY: &[FrontEnd] = &[
    FrontEnd::of::<ior::Ior>(),
    FrontEnd::of::<dd::Dd>(),
    FrontEnd {
        command: "fio",
        program: "fio",
        shown_as: "fio",
        main: |_, args| fio::main(args),
    },
    FrontEnd::of::<mdtest::Mdtest>(),
    FrontEnd::of::<smallfile::Smallfile>(),
    FrontEnd {
        command: "io500",
        program: "io500",
        shown_as: "io500",
        main: |_, args| io500::main(args),
    },
];

/// The front-end run as `ioscale NAME`.
pub fn by_command(name: &str) -> Option<&'static FrontEnd> {
    REGISTRY.iter().find(|f| f.command == name)
}

/// The front-end the binary is when started under the name `program`.
pub fn by_program(program: &str) -> Option<&'static FrontEnd> {
    REGISTRY.iter().find(|f| f.program == program)
}

#[cfg(test)]
mod tests {
    use super::ior::Ior;
    use super::*;

    /// Every front-end `main.rs` can reach is found by its subcommand and
    /// by its program name, and no two lines of the registry answer to the
    /// same name.
    #[test]
    fn the_registry_finds_each_front_end_by_both_names() {
        let commands = ["ior", "dd", "fio", "mdtest", "smallfile", "io500"];
        assert_eq!(REGISTRY.len(), commands.len());
        for c in commands {
            let f = by_command(c).unwrap_or_else(|| panic!("{c} is not registered"));
            let p = by_program(f.program).expect("found by its program name");
            assert_eq!(p.command, c, "{} answers to two front-ends", f.program);
        }
        assert_eq!(
            by_program("smallfile_cli.py").map(|f| f.command),
            Some("smallfile")
        );
        assert_eq!(by_command("ioscale ior").map(|f| f.command), None);
        assert_eq!(Ior::SHOWN_AS, "ioscale ior");
    }
}
