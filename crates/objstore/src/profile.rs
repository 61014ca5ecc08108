//! The AWS shared files (`~/.aws/credentials`, `~/.aws/config`): an INI
//! dialect with profile sections and indented sub-settings (`s3 =` then
//! `  addressing_style = path`), read the way the AWS tools read them.

use std::collections::HashMap;

/// One parsed shared file: section name → settings. A sub-setting is
/// stored as `parent.name` (`s3.addressing_style`).
#[derive(Debug, Default, Clone)]
pub(crate) struct SharedFile {
    sections: HashMap<String, HashMap<String, String>>,
}

impl SharedFile {
    /// Parses the text of a shared file. Lines that are neither a section,
    /// a setting nor a comment are skipped, as the AWS tools skip them.
    pub(crate) fn parse(text: &str) -> SharedFile {
        let mut file = SharedFile::default();
        let mut section: Option<String> = None;
        let mut parent: Option<String> = None;
        for raw in text.lines() {
            let indented = raw.starts_with([' ', '\t']);
            let line = raw.trim();
            if line.is_empty() || line.starts_with(['#', ';']) {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                let name = name.trim().to_string();
                file.sections.entry(name.clone()).or_default();
                section = Some(name);
                parent = None;
                continue;
            }
            let (Some(sec), Some((k, v))) = (&section, line.split_once('=')) else {
                continue;
            };
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
            let settings = file.sections.get_mut(sec).expect("section made above");
            match (&parent, indented) {
                (Some(p), true) => {
                    settings.insert(format!("{p}.{k}"), v);
                }
                _ => {
                    parent = v.is_empty().then(|| k.clone());
                    settings.insert(k, v);
                }
            }
        }
        file
    }

    /// A setting of a section, if set and not empty.
    pub(crate) fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.sections
            .get(section)?
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Whether the section exists.
    pub(crate) fn has(&self, section: &str) -> bool {
        self.sections.contains_key(section)
    }
}

/// The section of profile `name` in the config file: `[default]` or
/// `[profile NAME]` (`[profile default]` is accepted too).
pub(crate) fn config_section(file: &SharedFile, name: &str) -> Option<String> {
    let long = format!("profile {name}");
    if file.has(&long) {
        Some(long)
    } else if name == "default" && file.has("default") {
        Some("default".to_string())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sections_settings_and_sub_settings() {
        let f = SharedFile::parse(
            "# comment\n[default]\naws_access_key_id = AK\naws_secret_access_key=SK \n\n\
             [profile bench]\nregion = eu-west-3\ns3 =\n  addressing_style = path\n  \
             endpoint_url = http://127.0.0.1:9000\nregion2 = x\n  stray = y\n; c\n[empty]\n",
        );
        assert_eq!(f.get("default", "aws_access_key_id"), Some("AK"));
        assert_eq!(f.get("default", "aws_secret_access_key"), Some("SK"));
        assert_eq!(f.get("profile bench", "region"), Some("eu-west-3"));
        assert_eq!(f.get("profile bench", "s3.addressing_style"), Some("path"));
        assert_eq!(
            f.get("profile bench", "s3.endpoint_url"),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(f.get("profile bench", "region2"), Some("x"));
        assert_eq!(f.get("profile bench", "s3"), None);
        assert!(f.has("empty"));
        assert_eq!(
            config_section(&f, "bench").as_deref(),
            Some("profile bench")
        );
        assert_eq!(config_section(&f, "default").as_deref(), Some("default"));
        assert_eq!(config_section(&f, "none"), None);
    }
}
