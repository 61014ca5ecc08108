//! `ioscale man`: the man pages, from the same clap definitions as
//! `--help`.
//!
//! clap_mangen renders the title, name, synopsis, description and options;
//! this module adds the two sections it gets wrong for ioscale. Its
//! EXTRA section reflows the `--help` examples as prose (`ioscale  ior
//! -N  8` spread over a justified line, a trailing `\` cut from its
//! command): here they are an EXAMPLES section whose commands are no-fill
//! blocks, character for character as `--help` shows them. And its
//! SUBCOMMANDS section cites `ioscale-run(1)` pages: here the commands
//! cite a page only where one is written (`ioscale man --dir DIR` writes
//! `ioscale.1` and an `ioscale-NAME.1` per command); on standard output,
//! one stream holding every page, they name the page that follows.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Command;

use crate::exit::{Exit, Failure};

/// `ioscale man`'s flags.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write the pages into DIR (made if its parent exists) as files,
    /// `ioscale.1` and `ioscale-NAME.1` per command, instead of printing
    /// them all on standard output.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Escapes text for roff: backslashes, hyphens as minus signs (options
/// stay searchable and copyable), and a leading `.` or `'` that roff would
/// take for a request.
fn roff_text(line: &str) -> String {
    let mut s = line.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        s.insert_str(0, "\\&");
    }
    s
}

/// The EXAMPLES section of an `after_help` text: the commands (its
/// indented lines) as no-fill blocks, kept line for line, the prose
/// between and after them as filled paragraphs.
fn examples_section(after: &str) -> String {
    let mut out = String::from(".SH EXAMPLES\n");
    let mut in_block = false;
    for line in after.lines() {
        let example_head = line.starts_with("Example");
        let code = line.starts_with(' ');
        if code && !in_block {
            out.push_str(".PP\n.nf\n");
            in_block = true;
        }
        if !code && in_block && !line.is_empty() {
            out.push_str(".fi\n");
            in_block = false;
        }
        if in_block {
            // A blank line inside the examples separates groups.
            out.push_str(&roff_text(line.strip_prefix("  ").unwrap_or(line)));
            out.push('\n');
        } else if example_head {
            // "Examples (the EFS workshop's dd experiments):" keeps what
            // it says beyond the section's own name.
            let rest = line
                .split_once('(')
                .and_then(|(_, r)| r.rsplit_once(')'))
                .map(|(r, _)| r);
            if let Some(r) = rest {
                out.push_str(&format!(".PP\n{}:\n", roff_text(r)));
            }
        } else if line.is_empty() {
            out.push_str(".PP\n");
        } else {
            out.push_str(&roff_text(line));
            out.push('\n');
        }
    }
    if in_block {
        out.push_str(".fi\n");
    }
    out
}

/// The COMMANDS section of the top page: each command with its summary,
/// citing its page `ioscale-NAME(1)` when `pages` are written beside it,
/// else the page that follows in the same stream.
fn commands_section(cmd: &Command, pages: bool) -> String {
    let mut out = String::from(".SH COMMANDS\n");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name();
        if name == "help" {
            continue;
        }
        out.push_str(".TP\n");
        out.push_str(&format!("\\fBioscale {}\\fR", roff_text(name)));
        if pages {
            out.push_str(&format!(" (see \\fBioscale\\-{}\\fR(1))", roff_text(name)));
        }
        out.push('\n');
        if let Some(about) = sub.get_about() {
            out.push_str(&roff_text(&about.to_string()));
            out.push('\n');
        }
    }
    if !pages {
        out.push_str(".PP\nEach command's page follows this one.\n");
    }
    out
}

/// One page of `cmd`, titled `title`: clap_mangen's sections up to the
/// options, then the commands (the top page), the examples, the version.
fn page(cmd: &Command, title: &str, top: bool, pages: bool) -> std::io::Result<Vec<u8>> {
    // clap takes a command's name as a static string; the few page titles
    // live until the process ends, which `ioscale man` does next.
    let name: &'static str = Box::leak(title.to_string().into_boxed_str());
    let cmd = cmd.clone().name(name);
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if top {
        out.extend_from_slice(commands_section(&cmd, pages).as_bytes());
    }
    if let Some(after) = cmd.get_after_help() {
        out.extend_from_slice(examples_section(&after.to_string()).as_bytes());
    }
    if cmd.get_version().is_some() {
        man.render_version_section(&mut out)?;
    }
    Ok(once_preamble(&out))
}

/// `out` with roff's preamble (clap_mangen's definition of the `Aq`
/// string, which each section it renders repeats) kept once, at the top.
fn once_preamble(out: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(out);
    let mut seen: Vec<&str> = Vec::new();
    let mut kept = String::new();
    for line in text.split_inclusive('\n') {
        let preamble = line.starts_with(".ie \\n(.g .ds Aq") || line.starts_with(".el .ds Aq");
        if preamble && seen.contains(&line) {
            continue;
        }
        if preamble {
            seen.push(line);
        }
        kept.push_str(line);
    }
    kept.into_bytes()
}

/// Every page: `ioscale.1` and an `ioscale-NAME.1` per command, each with
/// its file name. `pages`: they are written as files (the top page cites
/// them).
pub fn pages(cli: &Command, pages: bool) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut out = vec![("ioscale.1".to_string(), page(cli, "ioscale", true, pages)?)];
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        let title = format!("ioscale-{}", sub.get_name());
        out.push((format!("{title}.1"), page(sub, &title, false, pages)?));
    }
    Ok(out)
}

/// `ioscale man [--dir DIR]`.
pub fn cmd_man(args: &ManArgs, cli: &Command) -> Exit {
    let Some(dir) = &args.dir else {
        let mut all = Vec::new();
        for (_, p) in pages(cli, false)? {
            all.extend(p);
        }
        let _ = std::io::stdout().write_all(&all);
        return Ok(0);
    };
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() && !parent.is_dir() {
        return Err(Failure::Usage(format!(
            "--dir {}: directory {} does not exist",
            dir.display(),
            parent.display()
        )));
    }
    if !dir.is_dir() {
        std::fs::create_dir(dir)
            .map_err(|e| Failure::Refused(format!("--dir {}: {e}", dir.display())))?;
    }
    for (name, bytes) in pages(cli, true)? {
        let p: &Path = &dir.join(&name);
        crate::output::write_named("--dir", p, &bytes).map_err(Failure::Other)?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_are_no_fill_blocks_kept_line_for_line() {
        let s = examples_section(
            "Examples (the EFS workshop's dd experiments):\n  # a comment\n  ioscale ior -N 8 \\\n      -o /f\n\nExit codes: 0 ran clean.",
        );
        assert_eq!(
            s,
            ".SH EXAMPLES\n.PP\nthe EFS workshop's dd experiments:\n.PP\n.nf\n# a comment\nioscale ior \\-N 8 \\e\n    \\-o /f\n\n.fi\nExit codes: 0 ran clean.\n"
        );
        assert!(roff_text(".x").starts_with("\\&."));
    }
}
