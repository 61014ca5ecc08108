//! Standard output and standard error as the whole program writes them.
//!
//! The standard `println!` and `eprintln!` panic when the write fails, and
//! it does fail when the terminal is gone: an SSH session that timed out
//! leaves a hung-up terminal (EIO on every write), a reader that quit a
//! pipe leaves EPIPE. A progress line, a table or a warning that cannot
//! reach the user is not worth the run: the macros here, which shadow the
//! standard ones in every module of this crate (they are declared before
//! the others in `main.rs`), drop what cannot be written, so the run goes
//! on, its `--json`, `--csv` and journal are written, and its exit code is
//! its own.

/// `println!` that drops a line standard output cannot take.
macro_rules! println {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

/// `print!` that drops what standard output cannot take.
macro_rules! print {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}

/// `eprintln!` that drops a line standard error cannot take.
macro_rules! eprintln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// `eprint!` that drops what standard error cannot take.
macro_rules! eprint {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($t)*);
    }};
}
