//! What a storage backend can do, and the one place a workload is checked
//! against it: a workload that needs what the backend lacks is refused
//! before anything is made, with one line naming the flag, never midway.

use spec::{FileNaming, Layout, MetaOp, MetaSpec, Op, SyncMode, WorkloadSpec};

/// A backend's abilities, one flag per thing a workload may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The backend's name in messages ("posix", "s3").
    pub name: &'static str,
    /// Directories are entries of their own (mkdir makes one, rmdir
    /// removes one); an object store has prefixes only.
    pub directories: bool,
    /// An atomic rename within a directory.
    pub rename: bool,
    /// Symbolic links.
    pub symlinks: bool,
    /// Permission bits.
    pub chmod: bool,
    /// Extended attributes.
    pub xattrs: bool,
    /// Writes appended to an existing file.
    pub append: bool,
    /// Writes at any offset of an existing file: random and mixed
    /// writes, several writers to one file, an overwrite that keeps what
    /// lies past its end. An object is written whole, in order.
    pub write_in_place: bool,
    /// O_DIRECT.
    pub direct: bool,
    /// A flush to stable storage (fsync, O_SYNC, O_DSYNC, syncfs).
    pub sync: bool,
    /// Files at paths the user names, outside ioscale's working directory
    /// (the IOR front-end's `-o`, dd's `if=`/`of=`).
    pub user_paths: bool,
    /// The smallest piece a file is written in when it is written in more
    /// than one (S3's multipart parts: 5 MiB, all but the last); 0: none.
    pub min_part: u64,
    /// Reads and writes may be served by this host's page cache (the
    /// cache warnings apply); an object store's requests never are.
    pub page_cache: bool,
}

/// A workload the backend cannot run: the flag, what it asks for, and why
/// the backend has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// The flag as the user gave it (`--ops rename`, `--direct`).
    pub flag: String,
    /// The backend's name.
    pub backend: &'static str,
    /// What the backend lacks, in words.
    pub lacks: &'static str,
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the {} backend {}",
            self.flag, self.backend, self.lacks
        )
    }
}

impl std::error::Error for Unsupported {}

impl Capabilities {
    fn refuse(&self, flag: impl Into<String>, lacks: &'static str) -> Unsupported {
        Unsupported {
            flag: flag.into(),
            backend: self.name,
            lacks,
        }
    }

    /// Whether a data workload runs on this backend: the first thing it
    /// needs and the backend lacks.
    pub fn check_data(&self, spec: &WorkloadSpec) -> Result<(), Unsupported> {
        if spec.direct && !self.direct {
            return Err(self.refuse("--direct", "has no O_DIRECT"));
        }
        if spec.sync != SyncMode::None && !self.sync {
            return Err(self.refuse(
                format!("--sync {}", SyncMode::label(spec.sync)),
                "has no flush to stable storage",
            ));
        }
        if !matches!(spec.naming, FileNaming::Native) && !self.user_paths {
            return Err(self.refuse(
                "the file names",
                "keeps its files in its own working directory only (no user paths)",
            ));
        }
        if let Some(u) = self.too_small_parts(spec) {
            return Err(u);
        }
        if !self.write_in_place {
            let in_place = |op: &Op| {
                matches!(op, Op::Randwrite | Op::Rw | Op::Randrw)
                    || (op.writes() && spec.layout == Layout::Shared && spec.threads > 1)
            };
            if let Some(op) = spec.ops.iter().find(|o| in_place(o)) {
                return Err(self.refuse(
                    format!("--op {}", op.name()),
                    "writes a file whole and in order only (no writes at an offset, \
                     no several writers to one file)",
                ));
            }
            if spec.start_offsets.iter().any(|&o| o > 0) {
                return Err(self.refuse(
                    "the start offsets",
                    "writes a file whole and in order only (no writes at an offset)",
                ));
            }
        }
        Ok(())
    }

    /// A write of files larger than `--xfer` in pieces of `--xfer` bytes
    /// smaller than [`Capabilities::min_part`]: refused before anything
    /// is made, as the store would refuse the upload at its end.
    fn too_small_parts(&self, spec: &WorkloadSpec) -> Option<Unsupported> {
        let file = spec.block.saturating_mul(spec.segments.max(1));
        let writes = spec.ops.iter().any(|o| o.writes());
        (self.min_part > 0 && writes && file > spec.xfer && spec.xfer < self.min_part).then(|| {
            self.refuse(
                format!("--xfer {}", spec.xfer),
                "uploads a file larger than --xfer in parts of --xfer bytes, and every part \
                 but the last must be at least 5 MiB (use --xfer 5m or more, or --xfer equal \
                 to --size)",
            )
        })
    }

    /// Whether a metadata workload runs on this backend: the first
    /// operation or flag it needs and the backend lacks.
    pub fn check_meta(&self, spec: &MetaSpec) -> Result<(), Unsupported> {
        if spec.direct && !self.direct {
            return Err(self.refuse("--direct", "has no O_DIRECT"));
        }
        if spec.fsync && !self.sync {
            return Err(self.refuse("--fsync", "has no flush to stable storage"));
        }
        if spec.sync_phase && !self.sync {
            return Err(self.refuse("--sync-phase", "has no flush to stable storage"));
        }
        for &op in &spec.ops {
            if let Some(lacks) = self.lacks_for(op) {
                return Err(self.refuse(format!("--ops {}", op.name()), lacks));
            }
        }
        Ok(())
    }

    /// What the backend lacks to run `op`, if anything.
    fn lacks_for(&self, op: MetaOp) -> Option<&'static str> {
        let (has, lacks) = match op {
            MetaOp::Rename => (self.rename, "has no atomic rename"),
            MetaOp::RenameDir if !self.directories => {
                (false, "has no directories of their own (prefixes only)")
            }
            MetaOp::RenameDir => (self.rename, "has no atomic rename"),
            MetaOp::Symlink => (self.symlinks, "has no symbolic links"),
            MetaOp::Chmod => (self.chmod, "has no permission bits"),
            MetaOp::Setxattr | MetaOp::Getxattr => (self.xattrs, "has no extended attributes"),
            MetaOp::Append => (self.append, "cannot append to a file"),
            MetaOp::Overwrite => (
                self.write_in_place,
                "cannot overwrite part of a file in place (truncate-overwrite replaces it whole)",
            ),
            MetaOp::Mkdir | MetaOp::StatDir | MetaOp::Rmdir => (
                self.directories,
                "has no directories of their own (prefixes only)",
            ),
            _ => (true, ""),
        };
        (!has).then_some(lacks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an object store would declare (the S3 sketch of
    /// docs/architecture.md).
    const OBJECTS: Capabilities = Capabilities {
        name: "s3",
        directories: false,
        rename: false,
        symlinks: false,
        chmod: false,
        xattrs: false,
        append: false,
        write_in_place: false,
        direct: false,
        sync: false,
        user_paths: false,
        min_part: 0,
        page_cache: false,
    };

    fn meta(ops: &[MetaOp]) -> MetaSpec {
        let r = spec::RawMeta {
            target: Some("/t".into()),
            ops: ops.to_vec(),
            ..Default::default()
        };
        r.build().expect("a valid spec")
    }

    fn data(ops: &[Op], layout: Layout, threads: u32) -> WorkloadSpec {
        let r = spec::RawWorkload {
            target: Some("/t".into()),
            ops: ops.to_vec(),
            layout: Some(layout),
            threads: Some(u64::from(threads)),
            ..Default::default()
        };
        r.build().expect("a valid spec")
    }

    #[test]
    fn posix_runs_every_workload() {
        let posix = super::super::posix::CAPABILITIES;
        let every = [
            MetaOp::Create,
            MetaOp::Stat,
            MetaOp::Read,
            MetaOp::Append,
            MetaOp::Overwrite,
            MetaOp::TruncateOverwrite,
            MetaOp::Chmod,
            MetaOp::Setxattr,
            MetaOp::Getxattr,
            MetaOp::Symlink,
            MetaOp::Readdir,
            MetaOp::Rename,
            MetaOp::Delete,
            MetaOp::Mkdir,
            MetaOp::StatDir,
            MetaOp::RenameDir,
            MetaOp::Rmdir,
            MetaOp::Cleanup,
        ];
        assert_eq!(every.len(), MetaOp::ALL.len());
        assert_eq!(posix.check_meta(&meta(&every)), Ok(()));
        let all = data(&Op::ALL, Layout::Shared, 4);
        assert_eq!(posix.check_data(&all), Ok(()));
    }

    #[test]
    fn an_object_store_refuses_what_it_lacks_naming_the_flag() {
        let e = OBJECTS.check_meta(&meta(&[MetaOp::Create, MetaOp::Rename]));
        assert_eq!(
            e.unwrap_err().to_string(),
            "--ops rename: the s3 backend has no atomic rename"
        );
        let e = OBJECTS.check_meta(&meta(&[MetaOp::Create, MetaOp::Mkdir]));
        assert!(e.unwrap_err().to_string().starts_with("--ops mkdir:"));
        assert_eq!(
            OBJECTS.check_meta(&meta(&[
                MetaOp::Create,
                MetaOp::Stat,
                MetaOp::Read,
                MetaOp::Readdir,
                MetaOp::TruncateOverwrite,
                MetaOp::Delete
            ])),
            Ok(())
        );
        let e = OBJECTS.check_data(&data(&[Op::Write, Op::Randwrite], Layout::PerThread, 2));
        assert!(e.unwrap_err().to_string().starts_with("--op randwrite:"));
        let e = OBJECTS.check_data(&data(&[Op::Write], Layout::Shared, 2));
        assert!(e.unwrap_err().to_string().starts_with("--op write:"));
        // One writer of its own object, then ranged reads: what S3 does.
        assert_eq!(
            OBJECTS.check_data(&data(&[Op::Write, Op::Randread], Layout::PerThread, 2)),
            Ok(())
        );
        assert_eq!(
            OBJECTS.check_data(&data(&[Op::Write, Op::Read], Layout::Shared, 1)),
            Ok(())
        );
    }
}
