//! The workload key: one short name for "the same experiment", so that
//! reruns group together whatever order their flags were typed in.
//!
//! It is derived from the validated spec the record carries (never from
//! argv): the spec's JSON with the facts that do not change what is
//! measured taken out — where it ran (the target is a dimension of its
//! own), how many times (`reps`, `rep_delay`), what the files are called
//! (`naming`, `prefix`) and whether they are kept (`keep`,
//! `clean_existing`) — plus the number of ranks, written canonically
//! (object keys sorted, no spaces) and hashed with 64-bit FNV-1a. The rule
//! is part of the history's contract (docs/history.md): a change to it
//! comes with a schema migration that recomputes the keys from the
//! records every row keeps.

use serde_json::Value;

use report::JobSpec;

/// Spec fields that do not change what a run measures.
const NOT_THE_EXPERIMENT: &[&str] = &[
    "target",
    "reps",
    "rep_delay",
    "naming",
    "prefix",
    "keep",
    "clean_existing",
];

/// A workload's key and the line that describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// `w-` and 16 hexadecimal digits.
    pub key: String,
    /// What the workload does, in words (the spec's own description).
    pub text: String,
}

/// 64-bit FNV-1a (Fowler, Noll, Vo): a stable hash with no dependency,
/// the same on every machine and in every version.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `v` as canonical JSON: object keys in byte order at every level, no
/// spaces; numbers as serde_json writes them.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The key of material `m` (an object), with prefix `w-`.
fn key_of(m: &Value) -> String {
    format!("w-{:016x}", fnv1a(canonical(m).as_bytes()))
}

/// The workload of a run record's spec, run by `ranks` processes.
pub fn of_spec(spec: &JobSpec, ranks: u32) -> Workload {
    let mut m = serde_json::to_value(spec).unwrap_or(Value::Null);
    if let Value::Object(o) = &mut m {
        for f in NOT_THE_EXPERIMENT {
            o.remove(*f);
        }
        o.insert("ranks".into(), Value::from(ranks.max(1)));
    }
    let mut text = spec.describe();
    if ranks > 1 {
        text.push_str(&format!(", {ranks} ranks"));
    }
    Workload {
        key: key_of(&m),
        text,
    }
}

/// The workload of an io500 record (`ioscale io500 --json`): its release,
/// mode, stonewall, tasks and ranks, and the phases it ran.
pub fn of_io500(rec: &Value) -> Workload {
    let pick = |k: &str| rec.get(k).cloned().unwrap_or(Value::Null);
    let phases: Vec<Value> = rec
        .get("phases")
        .and_then(Value::as_array)
        .map(|ps| ps.iter().filter_map(|p| p.get("name").cloned()).collect())
        .unwrap_or_default();
    let m = serde_json::json!({
        "kind": "io500",
        "io500": pick("io500"),
        "mode": pick("mode"),
        "stonewall_s": pick("stonewall_s"),
        "tasks": pick("tasks"),
        "ranks": pick("ranks"),
        "phases": phases,
    });
    let text = format!(
        "io500 {} ({}), {} task(s), stonewall {} s",
        pick("io500").as_str().unwrap_or("?"),
        pick("mode").as_str().unwrap_or("?"),
        pick("tasks"),
        pick("stonewall_s"),
    );
    Workload {
        key: key_of(&m),
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data workload of `ops` on `target`: `xfer` bytes per request,
    /// `threads` workers, `reps` repetitions, 1 MiB per worker.
    pub(crate) fn spec(target: &str, ops: &str, xfer: u64, threads: u64, reps: u64) -> JobSpec {
        let raw = spec::RawWorkload {
            target: Some(target.into()),
            ops: ops
                .split(',')
                .map(|o| spec::Op::parse(o).unwrap())
                .collect(),
            xfer: Some(xfer),
            threads: Some(threads),
            reps: Some(reps),
            size: Some(1 << 20),
            ..Default::default()
        };
        JobSpec::Run(raw.build().unwrap())
    }

    /// The canonical form sorts keys at every depth: two objects that
    /// differ only in key order are the same text.
    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"q":2,"p":3}],"x":"s"}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":"s","y":[1,{"p":3,"q":2}]},"b":1}"#).unwrap();
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(
            canonical(&a),
            r#"{"a":{"x":"s","y":[1,{"p":3,"q":2}]},"b":1}"#
        );
    }

    /// FNV-1a's published test values: the hash is the standard one, so
    /// a key can be recomputed by anyone from docs/history.md.
    #[test]
    fn fnv1a_matches_the_reference_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// The same experiment on another target, with other repetitions, is
    /// the same workload; another transfer size or thread count is not.
    #[test]
    fn the_key_ignores_target_and_reps_and_follows_the_experiment() {
        let m = 1 << 20;
        let a = of_spec(&spec("/a", "write,read", m, 2, 1), 1);
        let b = of_spec(&spec("/b", "write,read", m, 2, 5), 1);
        assert_eq!(a.key, b.key);
        assert!(a.key.starts_with("w-") && a.key.len() == 18, "{}", a.key);
        let c = of_spec(&spec("/a", "write,read", 4096, 2, 1), 1);
        let d = of_spec(&spec("/a", "write,read", m, 4, 1), 1);
        let e = of_spec(&spec("/a", "read,write", m, 2, 1), 1);
        assert_ne!(a.key, c.key);
        assert_ne!(a.key, d.key);
        assert_ne!(a.key, e.key, "the phase order is part of the experiment");
        // Two ranks of 2 threads are not one process of 2 threads.
        let f = of_spec(&spec("/a", "write,read", m, 2, 1), 2);
        assert_ne!(a.key, f.key);
        assert!(f.text.ends_with(", 2 ranks"), "{}", f.text);
    }
}
