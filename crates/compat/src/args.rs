//! The command-line pieces the tools' syntaxes share: a refused command
//! line ([`Usage`]), getopt-style single-letter options (IOR's and
//! mdtest's `-t 1m`, `-wrk`), and the values several front-ends take
//! alike (`-a POSIX`, `--progress MODE`).
//!
//! They live here, below every front-end's parser, so that each tool's
//! syntax is written once and reads its words the same way.

use crate::progress::{parse_mode, ProgressMode};

/// A command line the front-end refuses: printed with exit code 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A usage error with this message (each tool's parser says its refusals
/// through this).
pub fn usage(msg: impl Into<String>) -> Usage {
    Usage(msg.into())
}

/// A tool's single-letter options, as its getopt string would list them,
/// and how they set the tool's parsed command line `A`.
pub struct ShortOpts<A> {
    /// The tool's name in messages ("IOR", "mdtest").
    pub tool: &'static str,
    /// The subcommand named in `--help` hints ("ior", "mdtest").
    pub cmd: &'static str,
    /// Letters that take a value (`-t 1m`, `-t1m`, `-t=1m`).
    pub value: &'static str,
    /// Letters that are flags and may be bundled (`-wrk`).
    pub flags: &'static str,
    /// Why a letter ioscale knows of is refused, naming the nearest native option.
    pub unsupported: fn(&str) -> Option<&'static str>,
    /// Said of a word that is not an option (where the tool names its path).
    pub operand_hint: &'static str,
    /// Records `-h`.
    pub help: fn(&mut A),
    /// Applies a letter of `value` with its value.
    pub apply_value: fn(&mut A, char, &str) -> Result<(), Usage>,
    /// Applies a letter of `flags`.
    pub apply_flag: fn(&mut A, char),
}

/// What one short-option word held.
pub enum Short {
    /// `-h`.
    Help,
    /// A letter that takes a value, and the value.
    Value(char, String),
    /// One or more flag letters, all known and supported.
    Flags(String),
}

/// Reads one getopt-style word into `a` (see [`short_option`]) with the
/// tool's own appliers: help, a letter's value, or each bundled flag.
pub fn read_short<A>(
    o: &ShortOpts<A>,
    a: &mut A,
    arg: &str,
    args: &[String],
    i: &mut usize,
) -> Result<(), Usage> {
    match short_option(o, arg, args, i)? {
        Short::Help => (o.help)(a),
        Short::Value(c, v) => (o.apply_value)(a, c, &v)?,
        Short::Flags(fs) => fs.chars().for_each(|f| (o.apply_flag)(a, f)),
    }
    Ok(())
}

/// Reads one getopt-style word (`args[*i - 1]` is `arg`), taking the next
/// word as the value where the letter needs one. IOR and mdtest share this
/// syntax; only their letters differ. Every refusal names the option, and
/// the whole word when it was part of a bundle.
pub fn short_option<A>(
    o: &ShortOpts<A>,
    arg: &str,
    args: &[String],
    i: &mut usize,
) -> Result<Short, Usage> {
    let Some(body) = arg.strip_prefix('-').filter(|b| !b.is_empty()) else {
        return Err(usage(format!(
            "unexpected argument '{arg}': {} takes options only ({})",
            o.tool, o.operand_hint
        )));
    };
    let mut chars = body.chars();
    let c = chars.next().expect("body is not empty");
    if c == 'h' {
        return Ok(Short::Help);
    }
    if o.value.contains(c) {
        let rest = chars.as_str();
        let rest = rest.strip_prefix('=').unwrap_or(rest);
        let v = if rest.is_empty() {
            let v = args
                .get(*i)
                .ok_or_else(|| usage(format!("-{c} needs a value")))?;
            *i += 1;
            v.clone()
        } else {
            rest.to_string()
        };
        return Ok(Short::Value(c, v));
    }
    let within = if body.chars().count() > 1 {
        format!(" (in {arg})")
    } else {
        String::new()
    };
    for f in body.chars() {
        let opt = format!("-{f}");
        if let Some(hint) = (o.unsupported)(&opt) {
            return Err(usage(format!("{opt}{within}: {hint}")));
        }
        if o.flags.contains(f) {
            continue;
        }
        return Err(usage(if o.value.contains(f) {
            format!("{opt} takes a value; give it as its own option (e.g. `{opt} VALUE`), not bundled in {arg}")
        } else if f == '=' {
            format!(
                "{arg}: a flag takes no value; give the flag alone (see `ioscale {} --help`)",
                o.cmd
            )
        } else {
            format!(
                "{opt}{within}: not an {} option ioscale supports; see `ioscale {} --help` and docs/compat.md",
                o.tool, o.cmd
            )
        }));
    }
    Ok(Short::Flags(body.to_string()))
}

/// A workload check's message in the front-end's own terms: the spec
/// names ioscale's native flags (`--xfer`), which a user of the tool never
/// typed, so the flags the refusal carries ([`spec::SpecError::flags`])
/// are followed by the tool's option for each (`map`: native flag → tool
/// option, in `map`'s order), e.g. "(in IOR's terms: -t is --xfer)".
pub fn in_tool_terms(tool: &str, msg: &str, flags: &[&str], map: &[(&str, &str)]) -> String {
    let terms: Vec<String> = map
        .iter()
        .filter(|(native, _)| flags.contains(native))
        .map(|(native, theirs)| format!("{theirs} is {native}"))
        .collect();
    if terms.is_empty() {
        msg.to_string()
    } else {
        format!("{msg} (in {tool}'s terms: {})", terms.join(", "))
    }
}

/// The value of a front-end's own `--progress MODE` (IOR, mdtest,
/// smallfile and fio have no option of that name, so it clashes with
/// nothing of theirs).
pub fn progress_value(v: &str) -> Result<ProgressMode, Usage> {
    parse_mode(v).ok_or_else(|| Usage(format!("--progress {v}: use auto, bar, plain or none")))
}

/// `-a API` of IOR and mdtest: ioscale issues POSIX calls only; any other
/// API is refused with `instead`, what ioscale issues and the way to ask
/// for it.
pub fn posix_api(v: &str, instead: &str) -> Result<(), Usage> {
    if v.eq_ignore_ascii_case("POSIX") {
        Ok(())
    } else {
        Err(Usage(format!(
            "-a {v}: not supported: ioscale issues POSIX {instead}"
        )))
    }
}
