//! Symlink-safe, race-safe file system primitives for ioscale: nothing
//! foreign is ever deleted, replaced or read without bound.
//!
//! # What ioscale calls, and where
//!
//! **The data set (`run`, `meta`, IOR, smallfile).** Open the user's TARGET
//! with [`DirHandle::open_target`]; make or open the working directory
//! below it with [`DirHandle::mkdir_at`] / [`DirHandle::open_dir_at`] and
//! keep that handle for the whole run; record each directory's
//! [`DirHandle::id`] (in the marker, so `clean` can check it too). Create
//! data files with [`DirHandle::create_at`] (`O_EXCL|O_NOFOLLOW`), reopen
//! them with [`DirHandle::open_file_at`]. Write the marker with
//! [`replace_at`] (falls back to in-place on targets without rename; a
//! failed write leaves no temporary file). Right after the marker, take
//! the set's lock: [`SetLock::try_lock`] with [`lock_name`] of the marker
//! name; on [`TryLock::Held`] refuse with exit 2 naming
//! [`Holder::describe`]; keep the [`SetLock`] until the set is removed or
//! kept.
//!
//! **Cleanup and `clean`, `meta --ops cleanup`.** Take the lock first
//! (`clean` refuses a live holder; a stale one is taken over and
//! [`SetLock::stale_holder`] says whose it was). Then feed the naming
//! scheme to a [`Remover`] on the held working-directory handle — files,
//! then directories deepest first, with [`Remover::expect`] for recorded
//! identities — plus every name [`is_own_temp_name`] recognises from
//! [`DirHandle::list`]; then [`SetLock::remove`], the marker
//! ([`DirHandle::unlink_at`]) and the working directory with
//! `target.rmdir_at(name, Some(workdir.id()))`. Print
//! [`RemovalReport::describe`] for what was left; a swapped path is named
//! there and never followed.
//!
//! **Output files** (`--json`, `--csv`, `--html`, `summaryFile=`,
//! `--output-json`, `report --csv`): [`check_output`] for each at start-up
//! (exit 2 on refusal), [`write_output`] at the end; map
//! [`FlagError::exit_code`].
//!
//! **Input records** (`report`, `compare`, `sweep --resume`):
//! [`read_bounded`] (or [`open_bounded`] for a streaming parser) with
//! [`MAX_RECORD_BYTES`].
//!
//! **Sleeps and waits**: [`sleep_or_stop`] / [`sleep_until_or_stop`] with
//! the signal flag; build deadlines with [`deadline_after`] (`None` is
//! "never") and durations from floats with [`duration_from_secs_f64`];
//! [`Waited::Stopped`] ends in exit 130.
//!
//! **Tests**: with the `testing` feature, [`testing`] plants foreign files,
//! sabotages a target while a command runs and checks the foreign files
//! by content after every iteration.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod dir;
mod error;
mod id;
mod input;
mod lock;
mod output;
mod replace;
mod sleep;
mod tree;

#[cfg(feature = "testing")]
pub mod testing;

pub use dir::{stat_path, Access, DirHandle, EntryInfo, FileId, Kind, Removed};
pub use error::{Error, ErrorKind, FlagError, FlagErrorKind, Refusal, Result};
pub use input::{open_bounded, read_bounded, MAX_RECORD_BYTES};
pub use lock::{
    lock_name, start_ticks, Holder, Liveness, LockOptions, SetLock, TryLock, LOCK_SUFFIX,
};
pub use output::{
    check_output, place_of, write_output, write_output_until, OutputTarget, OutputWritten, Place,
};
pub use replace::{
    is_own_temp_name, rename_unsupported, replace_at, replace_at_unsynced, temp_base, temp_name,
    write_in_place, Written, TEMP_TAG,
};
pub use sleep::{
    deadline_after, duration_from_secs_f64, sleep_or_stop, sleep_until_or_stop, Waited, SLICE,
};
pub use tree::{remove_tree, Left, RemovalReport, Remover, MAX_LISTED, MAX_OPEN_DIRS};
