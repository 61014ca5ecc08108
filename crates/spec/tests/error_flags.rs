//! Every refusal carries, as data, exactly the native flags its message
//! names: the front-ends say those flags in their tool's terms from
//! `SpecError::flags`, never by searching the text. One case per check
//! that can be reached from a raw workload; a new or edited message that
//! names a flag it does not carry (or carries one it does not name) fails
//! here.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use spec::{
    Conflict, EntryKind, FileNaming, FileSize, Layout, MetaOp, Op, RawMeta, RawWorkload, SpecError,
};

/// The `--name` words of a message, each as long as it runs.
fn named(msg: &str) -> BTreeSet<String> {
    let b = msg.as_bytes();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while let Some(at) = msg[i..].find("--").map(|k| i + k) {
        let mut end = at + 2;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'-') {
            end += 1;
        }
        if end > at + 2 {
            out.insert(msg[at..end].to_string());
        }
        i = end.max(at + 2);
    }
    out
}

fn check(case: &str, e: SpecError) {
    let msg = e.to_string();
    let carried: BTreeSet<String> = e
        .flags()
        .iter()
        .filter(|f| f.starts_with("--"))
        .map(|f| f.to_string())
        .collect();
    assert_eq!(carried, named(&msg), "{case}: {msg}");
    assert!(
        e.flags()
            .iter()
            .all(|f| f.starts_with("--") || *f == "TARGET"),
        "{case}: {:?}",
        e.flags()
    );
}

fn data() -> RawWorkload {
    RawWorkload {
        target: Some("/tmp".into()),
        ops: vec![Op::Write],
        ..Default::default()
    }
}

fn meta() -> RawMeta {
    RawMeta {
        target: Some("/tmp".into()),
        ops: vec![MetaOp::Create, MetaOp::Delete],
        ..Default::default()
    }
}

type Edit<T> = fn(&mut T);

const DATA: &[(&str, Edit<RawWorkload>)] = &[
    ("no target", |r| r.target = None),
    ("no op", |r| r.ops.clear()),
    ("zero threads", |r| r.threads = Some(0)),
    ("too many threads", |r| r.threads = Some(1 << 20)),
    ("zero xfer", |r| r.xfer = Some(0)),
    ("huge xfer", |r| r.xfer = Some(4 << 30)),
    ("size and total", |r| {
        r.size = Some(1 << 20);
        r.total = Some(1 << 20);
    }),
    ("zero size", |r| r.size = Some(0)),
    ("zero segments", |r| r.segments = Some(0)),
    ("uneven total", |r| {
        r.threads = Some(3);
        r.total = Some(1 << 20);
    }),
    ("size not whole blocks", |r| {
        r.size = Some(3 << 20);
        r.block = Some(2 << 20);
    }),
    ("segments disagree", |r| {
        r.size = Some(4 << 20);
        r.block = Some(1 << 20);
        r.segments = Some(3);
    }),
    ("size into segments", |r| {
        r.size = Some(3 << 20);
        r.segments = Some(7);
    }),
    ("xfer over block", |r| {
        r.xfer = Some(2 << 20);
        r.block = Some(1 << 20);
    }),
    ("block not whole xfers", |r| {
        r.xfer = Some(3 << 20);
        r.block = Some(4 << 20);
    }),
    ("block × segments overflow", |r| {
        r.block = Some(1 << 40);
        r.segments = Some(1 << 30);
    }),
    ("total overflow", |r| {
        r.block = Some(1 << 40);
        r.segments = Some(1 << 20);
        r.threads = Some(4096);
    }),
    ("too many transfers", |r| {
        r.xfer = Some(1);
        r.block = Some(1 << 50);
    }),
    ("direct odd xfer", |r| {
        r.direct = true;
        r.xfer = Some(1000);
        r.block = Some(1000);
    }),
    ("zero iodepth", |r| r.iodepth = Some(0)),
    ("deep iodepth", |r| r.iodepth = Some(1 << 20)),
    ("zero reps", |r| r.reps = Some(0)),
    ("rwmix over 100", |r| r.rwmix_read = Some(101)),
    ("rwmix without rw", |r| r.rwmix_read = Some(30)),
    ("reorder alone", |r| r.reorder = Some(1)),
    ("reorder own data", |r| {
        r.threads = Some(2);
        r.reorder = Some(2);
    }),
    ("zero time", |r| r.time_limit = Some(Duration::ZERO)),
    ("ior dir", |r| {
        r.naming = Some(FileNaming::Ior {
            path: PathBuf::from("/tmp/.."),
        })
    }),
    ("dd paths", |r| {
        r.threads = Some(2);
        r.naming = Some(FileNaming::Dd {
            paths: vec!["/tmp/a".into()],
            notrunc: false,
            nofollow: false,
        })
    }),
    ("offsets per worker", |r| {
        r.layout = Some(Layout::Shared);
        r.start_offsets = vec![0];
    }),
    ("direct odd offset", |r| {
        r.direct = true;
        r.xfer = Some(4096);
        r.naming = Some(FileNaming::Dd {
            paths: vec!["/tmp/a".into()],
            notrunc: false,
            nofollow: false,
        });
        r.start_offsets = vec![100];
    }),
];

const META: &[(&str, Edit<RawMeta>)] = &[
    ("no target", |r| r.target = None),
    ("no ops", |r| r.ops.clear()),
    ("zero files", |r| r.files = Some(0)),
    ("too many files", |r| r.files = Some(u64::MAX)),
    ("file size backwards", |r| {
        r.file_size = Some(FileSize::Range { min: 8, max: 4 })
    }),
    ("file size huge", |r| {
        r.file_size = Some(FileSize::Fixed { bytes: 1 << 41 })
    }),
    ("zero record", |r| r.record_size = Some(0)),
    ("huge record", |r| r.record_size = Some(2 << 30)),
    ("direct odd sizes", |r| {
        r.direct = true;
        r.file_size = Some(FileSize::Fixed { bytes: 1000 });
    }),
    ("zero files per dir", |r| r.files_per_dir = Some(0)),
    ("zero dirs per dir", |r| {
        r.files_per_dir = Some(4);
        r.dirs_per_dir = Some(0);
    }),
    ("dirs without files per dir", |r| r.dirs_per_dir = Some(3)),
    ("prefix slash", |r| r.prefix = Some("a/b".into())),
    ("prefix long", |r| r.prefix = Some("p".repeat(250))),
    ("stride", |r| r.stride = Some(1)),
    ("leaf depth alone", |r| r.leaf_depth = Some(2)),
    ("leaf depth too deep", |r| {
        r.files_per_dir = Some(4);
        r.dirs_per_dir = Some(10);
        r.leaf_depth = Some(65);
    }),
    ("leaf depth too few leaves", |r| {
        r.files = Some(1000);
        r.files_per_dir = Some(1);
        r.dirs_per_dir = Some(2);
        r.leaf_depth = Some(1);
    }),
    ("order", |r| r.ops = vec![MetaOp::Create, MetaOp::Create]),
    ("second rep", |r| {
        r.ops = vec![MetaOp::Create];
        r.reps = Some(2);
    }),
    ("zero meta iodepth", |r| r.iodepth = Some(0)),
];

#[test]
fn every_data_refusal_carries_the_flags_it_names() {
    for (case, edit) in DATA {
        let mut r = data();
        edit(&mut r);
        match r.build() {
            Err(e) => check(case, e),
            Ok(_) => panic!("{case}: accepted"),
        }
    }
}

#[test]
fn every_metadata_refusal_carries_the_flags_it_names() {
    for (case, edit) in META {
        let mut r = meta();
        edit(&mut r);
        match r.build() {
            Err(e) => check(case, e),
            Ok(_) => panic!("{case}: accepted"),
        }
    }
}

#[test]
fn a_tree_conflict_carries_the_flags_it_names() {
    let all = [
        Conflict::Unverifiable,
        Conflict::Exists(EntryKind::File),
        Conflict::Exists(EntryKind::Link),
        Conflict::Exists(EntryKind::Dir),
    ];
    for c in all {
        let carried: BTreeSet<String> = c.flags().iter().map(|f| f.to_string()).collect();
        assert_eq!(carried, named(&c.to_string()), "{c}");
    }
}

#[test]
fn a_value_that_reads_like_a_flag_is_not_one() {
    let mut r = meta();
    r.prefix = Some("--files/".into());
    let e = r.build().unwrap_err();
    assert!(e.to_string().contains("--files/"), "{e}");
    assert_eq!(e.flags(), ["--prefix"]);
}

#[test]
fn the_words_of_a_message_are_found() {
    let got = named("--a b (--bc-d: x) --e; --, -- f --g");
    let want: BTreeSet<String> = ["--a", "--bc-d", "--e", "--g"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(got, want);
}
