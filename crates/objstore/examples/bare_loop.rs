//! The anchor of ioscale's S3 overhead benchmark: a bare loop of GETs or
//! PUTs made with the same crates ioscale's client uses (rusty-s3 signs,
//! one ureq agent per thread sends), and nothing else — no ioscale
//! types, no timing per request, no retries. It prints the rate and the
//! CPU time per request, to set beside `ioscale run s3://…` doing the
//! same work (docs/performance.md).
//!
//! ```text
//! AWS_ENDPOINT_URL=http://127.0.0.1:9000 AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… \
//!   cargo run --release -p ioscale-objstore --example bare_loop -- \
//!   --op get --size 4096 --objects 64 --threads 1 --seconds 5 s3://bench/bare
//! ```
//!
//! `--op get` first PUTs the `--objects` objects it reads (not timed).
//! The output is one line of `key=value` fields.

use std::time::{Duration, Instant};

use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

struct Opts {
    op: String,
    size: usize,
    objects: usize,
    threads: usize,
    seconds: f64,
    bucket: String,
    prefix: String,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        op: "get".into(),
        size: 4096,
        objects: 64,
        threads: 1,
        seconds: 5.0,
        bucket: String::new(),
        prefix: String::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--op" => o.op = val()?,
            "--size" => o.size = val()?.parse().map_err(|e| format!("--size: {e}"))?,
            "--objects" => o.objects = val()?.parse().map_err(|e| format!("--objects: {e}"))?,
            "--threads" => o.threads = val()?.parse().map_err(|e| format!("--threads: {e}"))?,
            "--seconds" => o.seconds = val()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            t if t.starts_with("s3://") => {
                let rest = &t[5..];
                let (b, p) = rest.split_once('/').unwrap_or((rest, ""));
                o.bucket = b.to_string();
                o.prefix = p.trim_end_matches('/').to_string();
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if o.bucket.is_empty()
        || !matches!(o.op.as_str(), "get" | "put")
        || o.objects == 0
        || o.threads == 0
    {
        return Err("usage: bare_loop --op get|put --size N --objects N --threads N --seconds S s3://BUCKET/PREFIX".into());
    }
    Ok(o)
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

/// User plus system CPU time of this process.
fn cpu() -> Duration {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(true)
        .max_idle_connections(1)
        .max_idle_connections_per_host(1)
        .no_delay(true)
        .build()
        .new_agent()
}

fn key(o: &Opts, thread: usize, i: usize) -> String {
    format!("{}/t{thread}-o{}", o.prefix, i % o.objects)
}

/// One thread's loop: requests until the deadline; returns their count.
fn run(
    o: &Opts,
    bucket: &Bucket,
    creds: &Credentials,
    thread: usize,
    deadline: Instant,
) -> Result<u64, String> {
    let agent = agent();
    let body = vec![0x5Au8; o.size];
    let mut buf = vec![0u8; o.size];
    let expires = Duration::from_secs(900);
    let mut n = 0u64;
    while Instant::now() < deadline {
        let k = key(o, thread, n as usize);
        if o.op == "put" {
            let url = bucket.put_object(Some(creds), &k).sign(expires);
            agent
                .put(url.as_str())
                .send(&body[..])
                .map_err(|e| format!("PUT {k}: {e}"))?;
        } else {
            let url = bucket.get_object(Some(creds), &k).sign(expires);
            let mut resp = agent
                .get(url.as_str())
                .call()
                .map_err(|e| format!("GET {k}: {e}"))?;
            let mut r = resp.body_mut().as_reader();
            let mut got = 0;
            loop {
                let m = std::io::Read::read(&mut r, &mut buf[got..])
                    .map_err(|e| format!("GET {k}: {e}"))?;
                if m == 0 {
                    break;
                }
                got += m;
            }
        }
        n += 1;
    }
    Ok(n)
}

fn main() {
    if let Err(e) = main_() {
        eprintln!("bare_loop: {e}");
        std::process::exit(2);
    }
}

fn main_() -> Result<(), String> {
    let o = parse()?;
    let endpoint = env("AWS_ENDPOINT_URL")?
        .parse()
        .map_err(|e| format!("AWS_ENDPOINT_URL: {e}"))?;
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into());
    let bucket = Bucket::new(endpoint, UrlStyle::Path, o.bucket.clone(), region)
        .map_err(|e| e.to_string())?;
    let creds = Credentials::new(env("AWS_ACCESS_KEY_ID")?, env("AWS_SECRET_ACCESS_KEY")?);
    if o.op == "get" {
        let a = agent();
        let body = vec![0x5Au8; o.size];
        for t in 0..o.threads {
            for i in 0..o.objects {
                let k = key(&o, t, i);
                let url = bucket
                    .put_object(Some(&creds), &k)
                    .sign(Duration::from_secs(900));
                a.put(url.as_str())
                    .send(&body[..])
                    .map_err(|e| format!("PUT {k}: {e}"))?;
            }
        }
    }
    let cpu0 = cpu();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(o.seconds);
    let counts: Vec<Result<u64, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..o.threads)
            .map(|t| {
                let (o, bucket, creds) = (&o, &bucket, &creds);
                s.spawn(move || run(o, bucket, creds, t, deadline))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err("a thread panicked".into())))
            .collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let cpu_s = (cpu() - cpu0).as_secs_f64();
    let mut requests = 0u64;
    for c in counts {
        requests += c?;
    }
    let rate = requests as f64 / elapsed;
    println!(
        "op={} size={} threads={} requests={requests} seconds={elapsed:.3} rate={rate:.1}/s \
         mib_s={:.2} cpu_s={cpu_s:.3} cpu_us_per_req={:.2}",
        o.op,
        o.size,
        o.threads,
        rate * o.size as f64 / (1024.0 * 1024.0),
        cpu_s * 1e6 / requests.max(1) as f64
    );
    Ok(())
}
