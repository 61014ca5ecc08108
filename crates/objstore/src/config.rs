//! Where the store is and who we are to it: the endpoint, the region, the
//! credentials and the addressing style, found the way the AWS tools find
//! them (flags, then the environment, then the profile in the shared
//! files), with the source of each kept for messages.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::profile::{config_section, SharedFile};

/// How the bucket is put in a request's URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressing {
    /// Virtual-host style on AWS endpoints for names DNS can hold, path
    /// style everywhere else (other stores, IP addresses, `localhost`).
    Auto,
    /// `ENDPOINT/BUCKET/KEY`.
    Path,
    /// `BUCKET.ENDPOINT/KEY`.
    VirtualHost,
}

impl Addressing {
    /// Parses `auto`, `path` or `virtual` (the AWS config file's
    /// `addressing_style` values).
    pub fn parse(s: &str) -> Option<Addressing> {
        match s {
            "auto" => Some(Addressing::Auto),
            "path" => Some(Addressing::Path),
            "virtual" | "virtual-host" => Some(Addressing::VirtualHost),
            _ => None,
        }
    }
}

/// What the command line says (each `None` falls back to the environment
/// and the profile).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--endpoint URL`.
    pub endpoint: Option<String>,
    /// `--region NAME`.
    pub region: Option<String>,
    /// `--profile NAME`: this profile's credentials before the
    /// environment's.
    pub profile: Option<String>,
    /// `--addressing auto|path|virtual`.
    pub addressing: Option<Addressing>,
}

/// An access key, its secret and an optional session token, with where
/// they were found.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The access key id.
    pub key: String,
    /// The secret access key.
    pub secret: String,
    /// The session token of temporary credentials.
    pub token: Option<String>,
    /// Where they came from (`the environment`, `profile bench in
    /// /root/.aws/credentials`), for messages.
    pub source: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The secret and the token never reach a log.
        f.debug_struct("Credentials")
            .field("key", &self.key)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// Everything reaching the store needs, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `http[s]://HOST[:PORT]`, without a path.
    pub endpoint: String,
    /// The signing region.
    pub region: String,
    /// The credentials.
    pub credentials: Credentials,
    /// The addressing style asked for (`Auto` is decided per bucket).
    pub addressing: Addressing,
    /// A PEM file of the certificates to trust instead of the built-in
    /// roots (`AWS_CA_BUNDLE`, `ca_bundle`).
    pub ca_bundle: Option<PathBuf>,
    /// An HTTP proxy to send every request through (`None`: the
    /// environment's `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`, as the AWS
    /// tools honour them).
    pub proxy: Option<String>,
    /// How long one read or write of a connection may wait (and a
    /// connect, up to 10 s) before the attempt counts as dropped.
    pub timeout: Duration,
}

/// The default of [`Settings::timeout`] (the AWS tools' socket timeout).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A setting that cannot be used: what, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// The region when nothing names one (the AWS tools' global default).
pub const DEFAULT_REGION: &str = "us-east-1";

/// The shared files and the profile name, read once.
struct Profiles {
    name: String,
    named_by: &'static str,
    credentials: (PathBuf, SharedFile),
    config: (PathBuf, SharedFile),
}

impl Profiles {
    fn load(flags: &Flags, var: &dyn Fn(&str) -> Option<String>) -> Result<Profiles, ConfigError> {
        let home = var("HOME").map(PathBuf::from);
        let path = |env: &str, name: &str| {
            var(env)
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
        };
        let (name, named_by) = match (&flags.profile, var("AWS_PROFILE")) {
            (Some(p), _) => (p.clone(), "--profile"),
            (None, Some(p)) => (p, "AWS_PROFILE"),
            (None, None) => ("default".to_string(), ""),
        };
        let credentials = read_shared(path("AWS_SHARED_CREDENTIALS_FILE", "credentials"))?;
        let config = read_shared(path("AWS_CONFIG_FILE", "config"))?;
        let p = Profiles {
            name,
            named_by,
            credentials,
            config,
        };
        if !p.named_by.is_empty() && !p.exists() {
            return Err(ConfigError(format!(
                "profile {:?} ({}) is in neither {} nor {}",
                p.name,
                p.named_by,
                p.credentials.0.display(),
                p.config.0.display()
            )));
        }
        Ok(p)
    }

    fn exists(&self) -> bool {
        self.credentials.1.has(&self.name) || config_section(&self.config.1, &self.name).is_some()
    }

    /// A setting of the profile in the config file.
    fn config(&self, key: &str) -> Option<String> {
        let sec = config_section(&self.config.1, &self.name)?;
        self.config.1.get(&sec, key).map(str::to_string)
    }

    /// The profile's keys: the credentials file first, then the config
    /// file.
    fn credentials(&self) -> Result<Option<Credentials>, ConfigError> {
        let creds = &self.credentials;
        let from_creds = |k: &str| creds.1.get(&self.name, k).map(str::to_string);
        let found = pair(&from_creds, &creds.0, &self.name)?;
        if found.is_some() {
            return Ok(found);
        }
        let get = |k: &str| self.config(k);
        let found = pair(&get, &self.config.0, &self.name)?;
        if found.is_none() {
            if let Some(k) = [
                "role_arn",
                "credential_process",
                "sso_session",
                "sso_start_url",
            ]
            .into_iter()
            .find(|k| self.config(k).is_some())
            {
                return Err(ConfigError(format!(
                    "profile {:?} in {} gets its credentials through {k}, which ioscale does \
                     not do: export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and \
                     AWS_SESSION_TOKEN) instead",
                    self.name,
                    self.config.0.display()
                )));
            }
        }
        Ok(found)
    }
}

/// The key pair of a profile section, if it has one; one half alone is
/// an error that names the file.
fn pair(
    get: &dyn Fn(&str) -> Option<String>,
    path: &Path,
    profile: &str,
) -> Result<Option<Credentials>, ConfigError> {
    match (get("aws_access_key_id"), get("aws_secret_access_key")) {
        (Some(key), Some(secret)) => Ok(Some(Credentials {
            key,
            secret,
            token: get("aws_session_token"),
            source: format!("profile {profile} in {}", path.display()),
        })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(ConfigError(format!(
            "profile {profile} in {} has aws_access_key_id but no aws_secret_access_key",
            path.display()
        ))),
        (None, Some(_)) => Err(ConfigError(format!(
            "profile {profile} in {} has aws_secret_access_key but no aws_access_key_id",
            path.display()
        ))),
    }
}

/// A shared file's text, if it exists; an unreadable one is an error.
fn read_shared(path: Option<PathBuf>) -> Result<(PathBuf, SharedFile), ConfigError> {
    let Some(path) = path else {
        return Ok((PathBuf::from("~/.aws/?"), SharedFile::default()));
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((path, SharedFile::parse(&text))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((path, SharedFile::default())),
        Err(e) => Err(ConfigError(format!("{}: {e}", path.display()))),
    }
}

/// The environment's keys, if both are set; one alone is an error.
fn env_credentials(
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Credentials>, ConfigError> {
    match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        (Some(key), Some(secret)) => Ok(Some(Credentials {
            key,
            secret,
            token: var("AWS_SESSION_TOKEN"),
            source: "the environment (AWS_ACCESS_KEY_ID)".to_string(),
        })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(ConfigError(
            "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".into(),
        )),
        (None, Some(_)) => Err(ConfigError(
            "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not".into(),
        )),
    }
}

/// Checks an endpoint URL: `http` or `https`, a host, an optional port,
/// no path, query, fragment or user. Returns it without a trailing `/`.
pub fn check_endpoint(url: &str, from: &str) -> Result<String, ConfigError> {
    let bad = |why: &str| ConfigError(format!("endpoint {url:?} ({from}): {why}"));
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| bad("not an http:// or https:// URL"))?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() {
        return Err(bad("no host"));
    }
    if authority.contains(['/', '?', '#']) {
        return Err(bad(
            "a path, query or fragment is not supported; give the host and port only",
        ));
    }
    if authority.contains('@') {
        return Err(bad(
            "user information in the URL is not used; give credentials as AWS tools do",
        ));
    }
    if authority
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(bad("the host holds a space or control character"));
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (h, rest) = v6.split_once(']').ok_or_else(|| bad("an unclosed '['"))?;
            let port = match rest {
                "" => None,
                r => Some(r.strip_prefix(':').ok_or_else(|| bad("text after ']'"))?),
            };
            (h, port)
        }
        None => match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    if port.is_some_and(|p| p.parse::<u16>().map_or(true, |p| p == 0)) {
        return Err(bad("the port is not a number from 1 to 65535"));
    }
    Ok(url.trim_end_matches('/').to_string())
}

impl Settings {
    /// Resolves the settings from the flags and this process's
    /// environment and shared files.
    pub fn from_env(flags: &Flags) -> Result<Settings, ConfigError> {
        Settings::resolve(flags, &|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// Resolves the settings from the flags and the variables `var`
    /// returns (the shared files are found through `HOME`,
    /// `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE`). In order:
    ///
    /// - credentials: the profile of `--profile`; the environment
    ///   (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    ///   `AWS_SESSION_TOKEN`); the profile of `AWS_PROFILE` or `default`,
    ///   in the credentials file then the config file;
    /// - region: `--region`, `AWS_REGION`, `AWS_DEFAULT_REGION`, the
    ///   profile's `region`, `us-east-1`;
    /// - endpoint: `--endpoint`, `AWS_ENDPOINT_URL_S3`,
    ///   `AWS_ENDPOINT_URL`, the profile's `s3.endpoint_url` or
    ///   `endpoint_url`, AWS's regional endpoint;
    /// - addressing: `--addressing`, the profile's `s3.addressing_style`,
    ///   auto;
    /// - CA bundle: `AWS_CA_BUNDLE`, the profile's `ca_bundle`.
    pub fn resolve(
        flags: &Flags,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConfigError> {
        let profiles = Profiles::load(flags, var)?;
        let credentials = match flags.profile {
            Some(_) => profiles.credentials()?,
            None => match env_credentials(var)? {
                Some(c) => Some(c),
                None => profiles.credentials()?,
            },
        };
        let credentials = credentials.ok_or_else(|| {
            ConfigError(format!(
                "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or \
                 give profile {:?} keys in {}",
                profiles.name,
                profiles.credentials.0.display()
            ))
        })?;
        let region = flags
            .region
            .clone()
            .or_else(|| var("AWS_REGION"))
            .or_else(|| var("AWS_DEFAULT_REGION"))
            .or_else(|| profiles.config("region"))
            .unwrap_or_else(|| DEFAULT_REGION.to_string());
        let endpoint = [
            (flags.endpoint.clone(), "--endpoint"),
            (var("AWS_ENDPOINT_URL_S3"), "AWS_ENDPOINT_URL_S3"),
            (var("AWS_ENDPOINT_URL"), "AWS_ENDPOINT_URL"),
            (
                profiles.config("s3.endpoint_url"),
                "the profile's s3.endpoint_url",
            ),
            (
                profiles.config("endpoint_url"),
                "the profile's endpoint_url",
            ),
        ]
        .into_iter()
        .find_map(|(v, from)| v.map(|v| (v, from)));
        let endpoint = match endpoint {
            Some((url, from)) => check_endpoint(&url, from)?,
            None => format!("https://s3.{region}.amazonaws.com"),
        };
        let addressing = match (flags.addressing, profiles.config("s3.addressing_style")) {
            (Some(a), _) => a,
            (None, Some(s)) => Addressing::parse(&s).ok_or_else(|| {
                ConfigError(format!(
                    "s3.addressing_style = {s:?} in {}: use auto, path or virtual",
                    profiles.config.0.display()
                ))
            })?,
            (None, None) => Addressing::Auto,
        };
        let ca_bundle = var("AWS_CA_BUNDLE")
            .or_else(|| profiles.config("ca_bundle"))
            .map(PathBuf::from);
        Ok(Settings {
            endpoint,
            region,
            credentials,
            addressing,
            ca_bundle,
            proxy: None,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// The host of the endpoint, without port or brackets.
    pub fn host(&self) -> &str {
        let rest = self.endpoint.split_once("://").map_or("", |(_, r)| r);
        match rest.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => rest.rsplit_once(':').map_or(rest, |(h, _)| h),
        }
    }

    /// The addressing style used for `bucket`: `Auto` is virtual-host
    /// style on AWS endpoints (`*.amazonaws.com`) for a bucket name DNS
    /// can hold without a dot (TLS certificates cover one label), path
    /// style otherwise.
    pub fn addressing_for(&self, bucket: &str) -> Addressing {
        match self.addressing {
            Addressing::Auto => {
                let dns_label = bucket
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
                if self.host().ends_with(".amazonaws.com") && dns_label {
                    Addressing::VirtualHost
                } else {
                    Addressing::Path
                }
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(flags: &Flags, vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::resolve(flags, &|k| map.get(k).cloned())
    }

    fn home_with(creds: &str, config: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join(".aws")).unwrap();
        std::fs::write(d.path().join(".aws/credentials"), creds).unwrap();
        std::fs::write(d.path().join(".aws/config"), config).unwrap();
        d
    }

    #[test]
    fn environment_first_then_profile() {
        let home = home_with(
            "[default]\naws_access_key_id=DK\naws_secret_access_key=DS\n\
             [bench]\naws_access_key_id=BK\naws_secret_access_key=BS\naws_session_token=BT\n",
            "[profile bench]\nregion = eu-west-3\ns3 =\n  addressing_style = path\n  \
             endpoint_url = http://127.0.0.1:9000\n",
        );
        let h = home.path().to_str().unwrap();
        let s = resolve(&Flags::default(), &[("HOME", h)]).unwrap();
        assert_eq!(
            (s.credentials.key.as_str(), s.region.as_str()),
            ("DK", "us-east-1")
        );
        assert_eq!(s.endpoint, "https://s3.us-east-1.amazonaws.com");
        assert_eq!(s.addressing_for("my-bucket"), Addressing::VirtualHost);
        assert_eq!(s.addressing_for("my.bucket"), Addressing::Path);
        let env = [
            ("HOME", h),
            ("AWS_ACCESS_KEY_ID", "EK"),
            ("AWS_SECRET_ACCESS_KEY", "ES"),
        ];
        let s = resolve(&Flags::default(), &env).unwrap();
        assert_eq!(s.credentials.key, "EK");
        assert!(s.credentials.source.contains("environment"));
        let s = resolve(&Flags::default(), &[("HOME", h), ("AWS_PROFILE", "bench")]).unwrap();
        assert_eq!(s.credentials.key, "BK");
        assert_eq!(s.credentials.token.as_deref(), Some("BT"));
        assert_eq!(s.region, "eu-west-3");
        assert_eq!(s.endpoint, "http://127.0.0.1:9000");
        assert_eq!(s.addressing, Addressing::Path);
        // --profile beats the environment's keys; --endpoint beats all.
        let flags = Flags {
            profile: Some("bench".into()),
            endpoint: Some("https://[::1]:8443/".into()),
            region: Some("ap-south-1".into()),
            ..Flags::default()
        };
        let s = resolve(&flags, &env).unwrap();
        assert_eq!(
            (s.credentials.key.as_str(), s.region.as_str()),
            ("BK", "ap-south-1")
        );
        assert_eq!(s.endpoint, "https://[::1]:8443");
        assert_eq!(s.host(), "::1");
        assert!(!format!("{:?}", s.credentials).contains("BS"));
    }

    #[test]
    fn clear_errors_for_what_cannot_be_used() {
        let home = home_with(
            "[half]\naws_access_key_id=K\n",
            "[profile role]\nrole_arn = arn:x\n",
        );
        let h = home.path().to_str().unwrap();
        let err = |flags: &Flags, vars: &[(&str, &str)]| resolve(flags, vars).unwrap_err().0;
        assert!(err(&Flags::default(), &[("HOME", h)]).starts_with("no AWS credentials"));
        assert!(
            err(&Flags::default(), &[("HOME", h), ("AWS_PROFILE", "nope")])
                .contains("is in neither")
        );
        assert!(
            err(&Flags::default(), &[("HOME", h), ("AWS_PROFILE", "half")])
                .contains("no aws_secret_access_key")
        );
        assert!(
            err(&Flags::default(), &[("HOME", h), ("AWS_PROFILE", "role")]).contains("role_arn")
        );
        assert!(err(
            &Flags::default(),
            &[("HOME", h), ("AWS_ACCESS_KEY_ID", "K")]
        )
        .contains("AWS_SECRET_ACCESS_KEY is not"));
        let keys = [
            ("HOME", h),
            ("AWS_ACCESS_KEY_ID", "K"),
            ("AWS_SECRET_ACCESS_KEY", "S"),
        ];
        for bad in [
            "ftp://x",
            "http://",
            "http://h/path",
            "http://h?q",
            "http://u:p@h",
            "http://h:0",
            "http://h:99999",
            "http://h:x",
            "http://[::1",
            "http://a b",
        ] {
            let flags = Flags {
                endpoint: Some(bad.into()),
                ..Flags::default()
            };
            assert!(err(&flags, &keys).contains("--endpoint"), "{bad} accepted");
        }
        let mut vars = keys.to_vec();
        vars.push(("AWS_ENDPOINT_URL", "http://127.0.0.1:1"));
        assert_eq!(
            resolve(&Flags::default(), &vars).unwrap().endpoint,
            "http://127.0.0.1:1"
        );
    }
}
