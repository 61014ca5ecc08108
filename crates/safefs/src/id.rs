//! A file's identity, by which a handle, a removal and a refusal tell
//! one file from another that took its name.

/// A file's identity: the device and inode `stat` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FileId {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
}

impl FileId {
    pub(crate) fn of(st: &rustix::fs::Stat) -> FileId {
        FileId {
            dev: st.st_dev,
            ino: st.st_ino,
        }
    }
}
