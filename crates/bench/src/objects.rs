//! Object-store targets: the executor runs a workload whose target is
//! `s3://BUCKET/PREFIX` on the S3 backend (`engine::backend::s3`) instead
//! of POSIX. The endpoint, region and credentials are found as the AWS
//! tools find them (flags, environment, `~/.aws`); the bucket is reached
//! once here, so wrong credentials or a missing bucket end the run with
//! one line before anything is made.

use std::path::Path;
use std::sync::OnceLock;

use engine::backend::s3::S3;
use objstore::{Client, Flags, RetryPolicy, Settings, Target};
use spec::WorkloadSpec;

use crate::error::Error;

static FLAGS: OnceLock<Flags> = OnceLock::new();

/// The command line's S3 flags (`--endpoint`, `--region`, `--profile`,
/// `--addressing`), set once by the command before it runs anything;
/// without them the environment and the profiles decide.
pub fn set_flags(flags: Flags) {
    let _ = FLAGS.set(flags);
}

/// Whether `target` names an object store (`s3://…`).
pub fn is_object_target(target: &Path) -> bool {
    target.to_str().is_some_and(Target::is_s3)
}

/// The S3 backend of `target`, when it is `s3://BUCKET/PREFIX`; `None`
/// for a path. The bucket is listed once: a refused signature, a missing
/// bucket or no answer is a setup error (exit 2) naming the bucket.
pub fn backend_of(target: &Path) -> Result<Option<S3>, Error> {
    if !is_object_target(target) {
        return Ok(None);
    }
    let text = target.to_string_lossy();
    let t = Target::parse(&text).map_err(|e| Error::Usage(format!("TARGET {text}: {e}")))?;
    let flags = FLAGS.get().cloned().unwrap_or_default();
    let settings =
        Settings::from_env(&flags).map_err(|e| Error::Usage(format!("TARGET {text}: {e}")))?;
    let client = Client::new(&settings, t.bucket(), RetryPolicy::default())
        .map_err(|e| Error::Usage(format!("TARGET {text}: {e}")))?;
    let prefix = match t.prefix().trim_end_matches('/') {
        "" => String::new(),
        p => format!("{p}/"),
    };
    client
        .connect(0)
        .list(&prefix, Some("/"), None, Some(1))
        .map_err(|e| {
            let why = if e.is_auth() {
                "the credentials were refused"
            } else if e.is_missing_bucket() {
                "the bucket does not exist"
            } else {
                "the store cannot be reached"
            };
            Error::Refused(format!("TARGET {text}: {why} ({e}); {}", client.describe()))
        })?;
    Ok(Some(S3::new(client)))
}

/// The checks of a data workload on an object store before anything is
/// made (the engine exists for the S3 backend; no ring options); the
/// buffer alignment (4 KiB, as for POSIX without O_DIRECT).
pub fn preflight(spec: &WorkloadSpec) -> Result<usize, Error> {
    engine::registry::check_data_of::<S3>(&spec.engine, spec.iodepth, spec.direct)
        .map_err(|e| Error::Usage(e.to_string()))?;
    if spec.uring_opts.is_some() {
        return Err(Error::Usage(
            "--uring-opts: the s3 backend has no io_uring ring to set up".into(),
        ));
    }
    Ok(4096)
}

/// `ioscale clean TARGET`: every set ioscale made that TARGET names, on
/// the backend its form says (an `s3://` target or a path).
pub fn clean(
    target: &Path,
    opts: safefs::LockOptions,
) -> Result<crate::dataset::CleanReport, Error> {
    match backend_of(target)? {
        Some(s3) => crate::dataset::clean_all_on(&s3, target, opts),
        None => crate::dataset::clean_all(target, opts),
    }
}

/// The checks of a metadata workload on an object store before anything
/// is made: the engine exists for the S3 backend and can serve the
/// operations (what the store lacks is refused later, naming the flag,
/// by the tree's capability check).
pub fn preflight_meta(spec: &spec::MetaSpec) -> Result<(), Error> {
    engine::registry::check_meta_of::<S3>(&spec.engine, spec.iodepth, &spec.ops)
        .map(drop)
        .map_err(|e| Error::Usage(e.to_string()))
}

/// [`set_flags`] from the command line's words; an unknown addressing
/// style is a usage error.
pub fn set_flags_from(
    endpoint: Option<String>,
    region: Option<String>,
    profile: Option<String>,
    addressing: Option<&str>,
) -> Result<(), Error> {
    let addressing = match addressing {
        None => None,
        Some(a) => Some(objstore::Addressing::parse(a).ok_or_else(|| {
            Error::Usage(format!(
                "--addressing {a}: not a style; use auto, path or virtual"
            ))
        })?),
    };
    set_flags(Flags {
        endpoint,
        region,
        profile,
        addressing,
    });
    Ok(())
}
