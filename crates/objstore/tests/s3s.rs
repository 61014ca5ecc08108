//! The client against a real S3 server (s3s-fs on loopback, signature
//! checks on), what it stored checked through the server's directory,
//! and faults injected by the test proxy counted as the client counts
//! them.

use std::time::Duration;

use objstore::testing::{skip_without_server, Action, FaultProxy, Rule, Server, TestCert};
use objstore::{Client, Conn, ErrorKind, Op, RetryPolicy, Settings};

const BUCKET: &str = "bench";

/// Bytes that differ at every offset and between seeds.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(0x9E37_79B9).wrapping_add(seed * 131) >> 3) as u8)
        .collect()
}

/// Retries that wait at most a few milliseconds, so fault tests are quick.
fn quick(retries: u32) -> RetryPolicy {
    RetryPolicy {
        retries,
        base: Duration::from_millis(2),
        cap: Duration::from_millis(10),
    }
}

fn server() -> Option<Server> {
    if skip_without_server() {
        return None;
    }
    Some(Server::start(&[BUCKET]).expect("s3s-fs starts"))
}

fn conn(settings: &Settings, bucket: &str, policy: RetryPolicy) -> Conn {
    Client::new(settings, bucket, policy)
        .expect("client")
        .connect(1)
}

#[test]
fn bytes_put_are_the_bytes_stored_and_got() {
    let Some(srv) = server() else { return };
    let mut c = conn(&srv.settings(), BUCKET, RetryPolicy::default());
    for (i, len) in [0usize, 1, 4096, 1 << 20, (1 << 20) + 7]
        .into_iter()
        .enumerate()
    {
        let key = format!("p/obj-{i}");
        let data = pattern(i as u64, len);
        let put = c.put(&key, &data).unwrap();
        assert!(put.timing.ttfb <= put.timing.total && put.timing.total > Duration::ZERO);
        assert_eq!(put.retries.count(), 0);
        assert_eq!(
            std::fs::read(srv.object_path(BUCKET, &key)).unwrap(),
            data,
            "{key}"
        );
        let mut buf = vec![0u8; len];
        let got = c.get(&key, None, &mut buf).unwrap();
        assert_eq!(got.value, len);
        assert!(got.timing.ttfb <= got.timing.total);
        assert_eq!(buf, data);
    }
    // An object longer than the buffer is an error, not a silent cut.
    let mut small = vec![0u8; 10];
    let e = c.get("p/obj-2", None, &mut small).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Protocol(_)), "{e}");
    assert!(e.to_string().starts_with("GET s3://bench/p/obj-2: "), "{e}");
}

#[test]
fn ranged_gets_return_exactly_the_range() {
    let Some(srv) = server() else { return };
    let mut c = conn(&srv.settings(), BUCKET, RetryPolicy::default());
    let data = pattern(9, 100_000);
    c.put("r/obj", &data).unwrap();
    let mut buf = vec![0u8; 8192];
    for (off, len) in [(0u64, 1u64), (4095, 4097), (99_999, 1), (50_000, 8192)] {
        let got = c.get("r/obj", Some((off, len)), &mut buf).unwrap();
        assert_eq!(got.value as u64, len);
        assert_eq!(
            &buf[..len as usize],
            &data[off as usize..(off + len) as usize]
        );
    }
    // A range past the end is the store's error, with its status.
    let e = c.get("r/obj", Some((100_000, 10)), &mut buf).unwrap_err();
    assert_eq!(e.status(), Some(416), "{e}");
    assert_eq!(e.attempts, 1);
    // Ranges that cannot be written are refused before any request.
    assert!(c.get("r/obj", Some((5, 0)), &mut buf).is_err());
    assert!(c.get("r/obj", Some((u64::MAX, 2)), &mut buf).is_err());
    // The last bytes of the object with a range that runs past it: S3
    // answers what there is.
    let got = c.get("r/obj", Some((99_990, 100)), &mut buf).unwrap();
    assert_eq!(&buf[..got.value], &data[99_990..]);
}

#[test]
fn multipart_uploads_store_their_parts_in_order_and_aborts_leave_nothing() {
    let Some(srv) = server() else { return };
    let mut c = conn(&srv.settings(), BUCKET, RetryPolicy::default());
    // S3 (and s3s-fs) refuse parts under 5 MiB but the last.
    const PART: usize = 5 << 20;
    let data = pattern(3, 2 * PART + 1000);
    let done = c.put_multipart("m/obj", &data, PART).unwrap();
    // Start, three parts (the last 1000 bytes), completion.
    assert_eq!(done.len(), 5);
    assert_eq!(
        std::fs::read(srv.object_path(BUCKET, "m/obj")).unwrap(),
        data
    );
    let mut small = c.create_upload("m/small").unwrap().value;
    c.put_part(&mut small, &data[..65_536]).unwrap();
    c.put_part(&mut small, &data[65_536..65_537]).unwrap();
    let e = c.complete_upload(&small).unwrap_err();
    assert_eq!(
        (e.op, e.status(), e.code()),
        (Op::CompleteUpload, Some(400), Some("EntityTooSmall"))
    );
    // (s3s-fs drops an upload whose completion failed, leaving its parts'
    // files: its abort is then refused as an unknown upload, where S3
    // would answer NoSuchUpload.)
    let _ = c.abort_upload(&small);
    let mut up = c.create_upload("m/aborted").unwrap().value;
    c.put_part(&mut up, &data[..65_536]).unwrap();
    assert_eq!(up.etags.len(), 1);
    let parts_of = |id: &str| -> Vec<String> {
        std::fs::read_dir(srv.root())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(id))
            .collect()
    };
    let parts = parts_of(&up.id);
    let on_disk = parts.iter().filter(|n| n.contains(".part-")).count();
    assert_eq!(on_disk, 1, "the part is on the server's disk: {parts:?}");
    c.abort_upload(&up).unwrap();
    assert!(c.head("m/aborted").unwrap().value.is_none());
    assert!(parts_of(&up.id).is_empty(), "{:?}", parts_of(&up.id));
}

#[test]
fn list_pages_cover_every_key_once_in_order() {
    let Some(srv) = server() else { return };
    let mut c = conn(&srv.settings(), BUCKET, RetryPolicy::default());
    let mut want: Vec<String> = (0..25).map(|i| format!("l/k{i:03}")).collect();
    want.extend((0..3).map(|i| format!("l/sub/s{i}")));
    for k in &want {
        c.put(k, b"x").unwrap();
    }
    c.put("other/k", b"x").unwrap();
    want.sort();
    let (mut got, mut pages, mut token) = (Vec::new(), 0, None::<String>);
    loop {
        let page = c
            .list("l/", None, token.as_deref(), Some(10))
            .unwrap()
            .value;
        pages += 1;
        assert!(page.objects.len() <= 10);
        got.extend(page.objects.into_iter().map(|o| o.key));
        token = page.next;
        if token.is_none() {
            break;
        }
    }
    assert_eq!(got, want);
    assert_eq!(pages, 3);
    let page = c.list("l/", Some("/"), None, None).unwrap().value;
    assert_eq!(page.prefixes, ["l/sub/"]);
    assert_eq!(page.objects.len(), 25);
    assert!(page.next.is_none());
    let empty = c.list("none/", None, None, None).unwrap().value;
    assert!(empty.objects.is_empty() && empty.next.is_none());
}

#[test]
fn head_copy_delete_and_conditional_put() {
    let Some(srv) = server() else { return };
    let mut c = conn(&srv.settings(), BUCKET, RetryPolicy::default());
    assert_eq!(c.head("h/a").unwrap().value, None);
    let data = pattern(5, 5000);
    c.put("h/a", &data).unwrap();
    let info = c.head("h/a").unwrap().value.unwrap();
    assert_eq!(info.size, 5000);
    assert!(info.etag.is_some());
    c.copy("h/a", "h/b c+d").unwrap();
    assert_eq!(
        std::fs::read(srv.object_path(BUCKET, "h/b c+d")).unwrap(),
        data
    );
    c.delete("h/a").unwrap();
    assert_eq!(c.head("h/a").unwrap().value, None);
    assert!(!srv.object_path(BUCKET, "h/a").exists());
    // Deleting what is not there is no error (S3 answers 204).
    c.delete("h/a").unwrap();
    // A copy of a missing key names the store's code.
    let e = c.copy("h/missing", "h/c").unwrap_err();
    assert_eq!((e.op, e.status()), (Op::Copy, Some(404)), "{e}");
    assert!(c.put_if_absent("h/new", b"first").unwrap().value);
    assert!(!c.put_if_absent("h/new", b"second").unwrap().value);
    assert_eq!(
        std::fs::read(srv.object_path(BUCKET, "h/new")).unwrap(),
        b"first"
    );
}

#[test]
fn wrong_secret_and_missing_bucket_are_one_clear_line_each() {
    let Some(srv) = server() else { return };
    let mut bad = srv.settings();
    bad.credentials.secret = "not-the-secret".into();
    let mut c = conn(&bad, BUCKET, RetryPolicy::default());
    let e = c.list("", None, None, Some(1)).unwrap_err();
    assert!(e.is_auth(), "{e}");
    assert_eq!(
        (e.status(), e.code()),
        (Some(403), Some("SignatureDoesNotMatch"))
    );
    assert_eq!(e.attempts, 1, "a refused signature is not retried");
    let line = e.to_string();
    assert!(
        line.starts_with("LIST s3://bench: HTTP 403 SignatureDoesNotMatch"),
        "{line}"
    );
    assert!(
        line.contains("the test server's keys") && !line.contains('\n'),
        "{line}"
    );
    let mut bad_key = srv.settings();
    bad_key.credentials.key = "unknown-key".into();
    let e = conn(&bad_key, BUCKET, RetryPolicy::default())
        .put("k", b"x")
        .unwrap_err();
    assert!(e.is_auth(), "{e}");

    // (s3s-fs makes a missing bucket's directory on a PUT, where S3
    // answers NoSuchBucket: a LIST is the check that holds on both.)
    let mut c = conn(&srv.settings(), "no-such-bucket", RetryPolicy::default());
    let e = c.list("", None, None, Some(1)).unwrap_err();
    assert!(e.is_missing_bucket(), "{e}");
    assert_eq!(e.code(), Some("NoSuchBucket"));
    assert_eq!(e.attempts, 1);
    assert!(e.to_string().contains(&srv.endpoint()), "{e}");
}

#[test]
fn nothing_listening_is_a_transport_error_after_the_retries() {
    let Some(srv) = server() else { return };
    let mut settings = srv.settings();
    // A port just bound and released: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    settings.endpoint = format!("http://127.0.0.1:{port}");
    let e = conn(&settings, BUCKET, quick(2))
        .put("k", b"x")
        .unwrap_err();
    assert!(e.is_transport(), "{e}");
    assert_eq!((e.attempts, e.retries.dropped), (3, 3), "{e}");
    assert!(e.to_string().contains("is the endpoint"), "{e}");
}

#[test]
fn throttles_server_errors_and_drops_are_counted_as_the_proxy_made_them() {
    let Some(srv) = server() else { return };
    let proxy = FaultProxy::start(
        srv.addr(),
        vec![
            Rule::new(Action::Status(503))
                .method("PUT")
                .every(2)
                .limit(3),
            Rule::new(Action::Status(500))
                .method("GET")
                .skip(1)
                .limit(2),
            Rule::new(Action::Drop).method("HEAD").limit(1),
            Rule::new(Action::CutBody)
                .method("GET")
                .path_contains("cut")
                .limit(1),
        ],
    )
    .unwrap();
    let mut settings = srv.settings();
    settings.endpoint = proxy.endpoint();
    let mut c = conn(&settings, BUCKET, quick(4));
    let data = pattern(1, 300_000);
    let mut total = objstore::Retries::default();
    for i in 0..6 {
        let d = c.put(&format!("t/{i}"), &data).unwrap();
        total.add(&d.retries);
    }
    assert_eq!(
        (total.throttled, total.server_errors, total.dropped),
        (3, 0, 0)
    );
    assert_eq!(proxy.stats().picked, [3, 0, 0, 0]);
    let mut buf = vec![0u8; data.len()];
    c.get("t/0", None, &mut buf).unwrap();
    let d = c.get("t/1", None, &mut buf).unwrap();
    assert_eq!((d.retries.server_errors, d.retries.count()), (2, 2));
    assert!(d.retries.failed_time > Duration::ZERO);
    assert_eq!(buf, data);
    let d = c.head("t/2").unwrap();
    assert_eq!(
        (d.retries.dropped, d.value.unwrap().size),
        (1, data.len() as u64)
    );
    c.put("t/cut", &data).unwrap();
    buf.fill(0);
    let d = c.get("t/cut", None, &mut buf).unwrap();
    assert_eq!(d.retries.dropped, 1, "a body cut short is retried");
    assert_eq!(buf, data);
    assert_eq!(proxy.stats().picked, [3, 2, 1, 1]);

    // Throttled on every attempt: the error says so and counts them all.
    proxy.set_rules(vec![Rule::new(Action::Status(503))]);
    let e = c.delete("t/0").unwrap_err();
    assert_eq!((e.status(), e.code()), (Some(503), Some("SlowDown")), "{e}");
    assert_eq!((e.attempts, e.retries.throttled), (5, 5), "{e}");
    assert!(e.to_string().ends_with("(after 5 attempts)"), "{e}");
    assert_eq!(proxy.stats().picked, [5]);
}

#[test]
fn a_worker_keeps_one_connection_and_delays_show_in_its_latency() {
    let Some(srv) = server() else { return };
    let proxy = FaultProxy::start(srv.addr(), Vec::new()).unwrap();
    let mut settings = srv.settings();
    settings.endpoint = proxy.endpoint();
    let client = Client::new(&settings, BUCKET, RetryPolicy::default()).unwrap();
    let mut a = client.connect(1);
    let mut buf = vec![0u8; 4096];
    for i in 0..20 {
        a.put(&format!("c/{i}"), &buf).unwrap();
        a.get(&format!("c/{i}"), None, &mut buf).unwrap();
        a.head(&format!("c/{i}")).unwrap();
    }
    a.list("c/", None, None, Some(5)).unwrap();
    a.delete("c/0").unwrap();
    assert_eq!(proxy.stats().connections, 1, "{:?}", proxy.stats());
    let mut b = client.connect(2);
    b.head("c/1").unwrap();
    assert_eq!(proxy.stats().connections, 2);

    proxy.set_rules(vec![
        Rule::new(Action::Delay(Duration::from_millis(150))).method("GET")
    ]);
    let d = a.get("c/1", None, &mut buf).unwrap();
    assert!(
        d.timing.ttfb >= Duration::from_millis(150),
        "{:?}",
        d.timing
    );
    assert_eq!(d.retries.count(), 0);
}

#[test]
fn virtual_host_addressing_reaches_the_bucket_by_its_host_name() {
    if skip_without_server() {
        return;
    }
    let srv = Server::start_with(&[BUCKET], &["s3.ioscale.test:9"]).unwrap();
    // The forward proxy resolves every host to the server, so the
    // bucket's host name needs no DNS.
    let proxy = FaultProxy::start(srv.addr(), Vec::new()).unwrap();
    let mut settings = srv.settings();
    settings.endpoint = "http://s3.ioscale.test:9".into();
    settings.addressing = objstore::Addressing::VirtualHost;
    settings.proxy = Some(proxy.endpoint());
    let mut c = conn(&settings, BUCKET, RetryPolicy::default());
    c.put("v/obj", b"virtual").unwrap();
    assert_eq!(
        std::fs::read(srv.object_path(BUCKET, "v/obj")).unwrap(),
        b"virtual"
    );
    let page = c.list("v/", None, None, None).unwrap().value;
    assert_eq!(page.objects.len(), 1);
}

#[test]
fn https_with_the_ca_bundle_and_a_clear_error_without_it() {
    let Some(srv) = server() else { return };
    let cert = TestCert::make().expect("openssl makes a test certificate");
    let proxy =
        FaultProxy::start_tls(srv.addr(), Vec::new(), &cert.cert_pem, &cert.key_pem).unwrap();
    let mut settings = srv.settings();
    settings.endpoint = proxy.endpoint();
    assert!(settings.endpoint.starts_with("https://127.0.0.1:"));
    // The built-in roots do not know the test CA: refused, not retried.
    let e = conn(&settings, BUCKET, quick(3))
        .put("s/obj", b"tls")
        .unwrap_err();
    assert!(e.is_transport() && e.attempts == 1, "{e}");
    assert!(e.to_string().contains("AWS_CA_BUNDLE"), "{e}");
    settings.ca_bundle = Some(cert.ca_bundle());
    let mut c = conn(&settings, BUCKET, RetryPolicy::default());
    let data = pattern(11, 200_000);
    c.put("s/obj", &data).unwrap();
    assert_eq!(
        std::fs::read(srv.object_path(BUCKET, "s/obj")).unwrap(),
        data
    );
    let mut buf = vec![0u8; 1000];
    c.get("s/obj", Some((1000, 1000)), &mut buf).unwrap();
    assert_eq!(buf, data[1000..2000]);
    assert_eq!(proxy.stats().connections, 2, "one refused, one kept");
    // A bundle with no certificate in it is a setting error.
    let empty = tempfile::NamedTempFile::new().unwrap();
    settings.ca_bundle = Some(empty.path().to_path_buf());
    let e = Client::new(&settings, BUCKET, RetryPolicy::default()).unwrap_err();
    assert!(e.0.contains("no PEM certificate"), "{e}");
}

#[test]
fn a_stalled_answer_times_out_and_counts_as_dropped() {
    let Some(srv) = server() else { return };
    let proxy = FaultProxy::start(
        srv.addr(),
        vec![Rule::new(Action::Delay(Duration::from_secs(3))).method("GET")],
    )
    .unwrap();
    let mut settings = srv.settings();
    settings.endpoint = proxy.endpoint();
    settings.timeout = Duration::from_millis(300);
    let mut c = conn(&settings, BUCKET, quick(1));
    c.put("st/obj", b"stalled").unwrap();
    let mut buf = [0u8; 16];
    let e = c.get("st/obj", None, &mut buf).unwrap_err();
    assert!(e.is_transport(), "{e}");
    assert_eq!((e.attempts, e.retries.dropped), (2, 2), "{e}");
    assert!(e.retries.failed_time >= Duration::from_millis(600), "{e:?}");
}

#[test]
fn a_stop_flag_ends_the_backoff_of_a_throttled_request() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let Some(srv) = server() else { return };
    let proxy = FaultProxy::start(srv.addr(), vec![Rule::new(Action::Status(503))]).unwrap();
    let mut settings = srv.settings();
    settings.endpoint = proxy.endpoint();
    // Left alone, five retries would wait up to 10 s each.
    let slow = RetryPolicy {
        retries: 5,
        base: Duration::from_secs(10),
        cap: Duration::from_secs(10),
    };
    let mut c = conn(&settings, BUCKET, slow);
    let stop = Arc::new(AtomicBool::new(false));
    c.set_stop(stop.clone());
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, Ordering::Relaxed);
    });
    let start = std::time::Instant::now();
    let e = c.put("stop/obj", b"x").unwrap_err();
    setter.join().unwrap();
    assert_eq!(e.code(), Some("SlowDown"), "{e}");
    assert!(e.attempts < 6, "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(e.retries.throttled, e.attempts);
}

#[test]
fn keys_with_spaces_plus_and_unicode_round_trip_through_list() {
    let Some(srv) = server() else { return };
    let mut c = conn(&srv.settings(), BUCKET, RetryPolicy::default());
    let key = "u/a b+c%d é&<x>";
    c.put(key, b"odd").unwrap();
    assert_eq!(std::fs::read(srv.object_path(BUCKET, key)).unwrap(), b"odd");
    let page = c.list("u/", None, None, None).unwrap().value;
    let keys: Vec<&str> = page.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, [key]);
    assert_eq!(c.head(key).unwrap().value.unwrap().size, 3);
    c.copy(key, "u/copy é").unwrap();
    c.delete(key).unwrap();
    assert!(!srv.object_path(BUCKET, key).exists());
}
