//! A time stamp file as a timed step (io500's `timestamp` phase): rank 0
//! makes an empty file in a directory it holds, through the backend table,
//! and times the making; every rank learns the file's modification time
//! (what a later find's `-newer` compares with) and the time it took.
//!
//! It stands beside [`crate::exec::execute`] because it is not a workload
//! of workers: one file, made once, by one rank. The front-end only
//! renders the figure it returns; nothing here prints.

use std::time::Instant;

use coord::Coordinator;
use engine::backend::{Backend, Dir};

use crate::error::Error;

/// What the step measured.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stamped {
    /// The file's modification time (seconds, nanoseconds since the epoch).
    pub modified: (i64, u32),
    /// Seconds from the start of the making to the end of the stat that
    /// read its time back, on rank 0.
    pub elapsed_s: f64,
}

/// Makes the empty file `name` in `dir` (rank 0's: `Some` there, `None`
/// on the other ranks), durably, replacing any regular file of that name by a
/// rename (a link planted there is replaced as a name, never followed),
/// reads its modification time back without following a link, and tells
/// every rank. A collective call: every rank makes it. The error is rank
/// 0's reason, on every rank.
pub fn stamp<B: Backend>(
    dir: Option<&B::Dir>,
    name: &str,
    coord: &dyn Coordinator,
) -> Result<Stamped, Error> {
    let made: Result<Stamped, String> = match dir {
        Some(d) => make::<B>(d, name),
        None => Err(String::new()),
    };
    let shared: Result<Stamped, String> = coord
        .broadcast_as(&made)
        .map_err(Error::rank("the time stamp"))?;
    shared.map_err(|e| {
        Error::Refused(if e.is_empty() {
            format!("rank 0 could not make {name}")
        } else {
            e
        })
    })
}

/// Rank 0's half of [`stamp`].
fn make<B: Backend>(d: &B::Dir, name: &str) -> Result<Stamped, String> {
    let t0 = Instant::now();
    d.replace_at(name, b"", true).map_err(|e| e.to_string())?;
    let at = B::at_of(d).map_err(|e| format!("{}: {e}", d.path().display()))?;
    let mut c = name.as_bytes().to_vec();
    c.push(0);
    let st = B::stat(&at, &c).map_err(|e| format!("{}: {e}", d.child_path(name).display()))?;
    let elapsed_s = t0.elapsed().as_secs_f64();
    Ok(Stamped {
        modified: st.modified,
        elapsed_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::backend::posix::Posix;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn the_file_is_made_and_its_own_time_returned() {
        let d = tempfile::tempdir().unwrap();
        let held = Posix.open_target(d.path()).unwrap();
        let s = stamp::<Posix>(Some(&held), "timestampfile", &coord::Solo).unwrap();
        let md = std::fs::symlink_metadata(d.path().join("timestampfile")).unwrap();
        assert!(md.is_file() && md.len() == 0);
        assert_eq!(s.modified, (md.mtime(), md.mtime_nsec() as u32));
        assert!(s.elapsed_s > 0.0 && s.elapsed_s.is_finite());
    }

    #[test]
    fn a_link_at_the_name_is_refused_and_its_target_kept() {
        let d = tempfile::tempdir().unwrap();
        let foreign = d.path().join("foreign");
        std::fs::write(&foreign, b"theirs").unwrap();
        std::os::unix::fs::symlink(&foreign, d.path().join("timestampfile")).unwrap();
        let held = Posix.open_target(d.path()).unwrap();
        let e = stamp::<Posix>(Some(&held), "timestampfile", &coord::Solo).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&foreign).unwrap(), b"theirs");
        assert!(std::fs::symlink_metadata(d.path().join("timestampfile"))
            .unwrap()
            .file_type()
            .is_symlink());
    }
}
