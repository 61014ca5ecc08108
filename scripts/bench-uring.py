#!/usr/bin/env python3
"""Queue depth benchmark: ioscale's io_uring engines against fio's, interleaved.

Called by scripts/bench-uring (which builds the example binaries). Two parts:

data  O_DIRECT 4 KiB random reads of a 1 GiB file on the ext4 of /work, one
      worker, for --secs seconds per run, at depths 1, 8, 32, 128. The
      `ioscale` binary (`ioscale run --engine io_uring --uring-opts ...`,
      reading a file it laid out once with --keep) against fio's io_uring
      engine with its best options, on the same file. Every round runs every
      variant once, in a rotating order. Reports IOPS and whole-process CPU
      per request (wait4 rusage, start-up included for both tools), the
      best variant of each tool per depth (by median IOPS), and the median
      of the per-round ratios ioscale-best / fio-best.
iowq  (only with --only ...,iowq) create, stat and delete on a fresh tmpfs,
      one op per run, 1 thread at depth 32: the io_uring metadata engine with
      the io-wq worker cap at the CPU count (its default on a local fs), at
      --iodepth and at the kernel's default, with and without IOSQE_ASYNC,
      against the sync engine. Counts
      the io-wq worker threads (iou-wrk-*) and their CPU time from /proc.
meta  create/stat/delete of empty files through `ioscale meta --engine E
      --iodepth D`: threads x depth, sync engine against the io_uring
      metadata engine, on a fresh tmpfs and on ioscale-testfs with
      --meta-delay 2ms. Reports files/s and files per CPU-second of each
      phase from the JSON record (in-phase process CPU: io-wq workers are
      threads of the process, so their CPU is included), medians over the
      rounds.

Standard library only.
"""

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def log(msg=""):
    print(msg, flush=True)


def run(argv):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.stdout.read(), p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError("failed (%d): %s\n%s" % (code, " ".join(argv), err.decode()))
    return out.decode(), ru.ru_utime + ru.ru_stime


def json_path():
    """A record path in a scratch directory removed when the script exits."""
    d = tempfile.mkdtemp(prefix="ioscale-bench-json-")
    atexit.register(shutil.rmtree, d, True)
    return os.path.join(d, "m.json")


def med(xs):
    return statistics.median(xs) if xs else float("nan")


FIO_VARIANTS = {
    "fio fixedbufs+registerfiles": ["--fixedbufs", "--registerfiles"],
    "fio ...+batch_submit": ["--fixedbufs", "--registerfiles", "BATCH"],
    "fio ...+sqthread_poll": ["--fixedbufs", "--registerfiles", "--sqthread_poll=1"],
}
# sqpoll=1000: the same idle time as fio's sqthread_poll (the kernel's 1 s
# default), with fixed buffers and the registered file like fio's variant.
# tuned,spin: no polling thread, the worker spins for its completions.
IOSCALE_VARIANTS = ["plain", "tuned", "tuned,batch", "tuned,spin", "fixedbufs,files,sqpoll=1000"]


def ratio_line(what, xs, ys, i):
    """`what` with the per-round ratios of field `i` (0: rate, 1: per
    CPU-second) of the runs `xs` over the runs `ys`, and their median."""
    r = [x[i] / y[i] for x, y in zip(xs, ys)]
    return "%s, per round: %s; median **%.3f**" % (what, " ".join("%.2f" % v for v in r), med(r))


def data_part(a, tdir):
    ex = os.path.join(tdir, "release/ioscale")
    d = tempfile.mkdtemp(prefix="bench-uring.", dir=a.data_dir)
    js = os.path.join(d, "r.json")
    common = ["--xfer", "4k", "--size", "1g", "--direct", "--keep", "--seed", "3000"]
    try:
        # ioscale lays the file out once and keeps it (its marker lets the
        # read runs use it); fio reads the same file.
        run([ex, "run", "--op", "write", "--xfer", "1m", "--size", "1g", "--direct",
             "--keep", "--seed", "3000", "-q", d])
        f = os.path.join(d, "ioscale.d", "file.00000000")
        if not os.path.exists(f):
            raise RuntimeError("no data file at " + f)
        variants = [("ioscale " + v, None, v) for v in IOSCALE_VARIANTS]
        variants += [(k, v, None) for k, v in FIO_VARIANTS.items()]
        res = {}  # (depth, name) -> [(iops, cpu_per_op_us)]
        for rnd in range(a.pairs + 1):
            for depth in a.depths:
                k = rnd % len(variants)
                order = variants[k:] + variants[:k]
                for name, fio_opts, io_opts in order:
                    if io_opts is not None:
                        _, cpu = run([ex, "run", "--op", "randread", "--engine", "io_uring",
                                      "--iodepth", str(depth), "--uring-opts", io_opts,
                                      "--time", "%gs" % a.secs, "--json", js, "-q"]
                                     + common + [d])
                        ph = json.load(open(js))["phases"][0]
                        ops, iops = ph["ops"], ph["iops"]
                    else:
                        opts = []
                        for o in fio_opts:
                            if o == "BATCH":
                                b = max(1, depth // 4)
                                opts += ["--iodepth_batch_submit=%d" % b,
                                         "--iodepth_batch_complete_min=1"]
                            else:
                                opts.append(o)
                        out, cpu = run(["fio", "--name=c", "--filename=" + f, "--size=1g",
                                        "--bs=4k", "--rw=randread", "--ioengine=io_uring",
                                        "--direct=1", "--iodepth=%d" % depth, "--randseed=3000",
                                        "--runtime=%g" % a.secs, "--time_based",
                                        "--output-format=json"] + opts)
                        j = json.loads(out[out.find("{"):])
                        r = j["jobs"][0]["read"]
                        ops, iops = r["total_ios"], r["iops"]
                    if rnd == 0:
                        continue  # warm-up round
                    res.setdefault((depth, name), []).append((iops, cpu * 1e6 / max(ops, 1)))
            if rnd:
                log("  data round %d of %d done" % (rnd, a.pairs))
        log("\n### data: O_DIRECT 4 KiB random read, 1 worker, ext4 on /work, %gs per run, %d rounds, load %s\n"
            % (a.secs, a.pairs, open("/proc/loadavg").read().split()[0]))
        log("| depth | variant | IOPS (median) | CPU µs/op (median) |")
        log("|---|---|---|---|")
        summary = []
        for depth in a.depths:
            for name, _, _ in variants:
                xs = res[(depth, name)]
                log("| %d | %s | %.0f | %.2f |" % (depth, name, med([x[0] for x in xs]),
                                                 med([x[1] for x in xs])))
            best = {}
            for tool in ("ioscale", "fio"):
                names = [n for n, _, _ in variants if n.startswith(tool)]
                best[tool] = max(names, key=lambda n: med([x[0] for x in res[(depth, n)]]))
            io_x, fio_x = res[(depth, best["ioscale"])], res[(depth, best["fio"])]
            iops_r = [i[0] / f_[0] for i, f_ in zip(io_x, fio_x)]
            cpu_r = [i[1] / f_[1] for i, f_ in zip(io_x, fio_x)]
            # CPU at equal footing: ioscale's cheapest variant against fio's cheapest.
            cheap = {}
            for tool in ("ioscale", "fio"):
                names = [n for n, _, _ in variants if n.startswith(tool)]
                cheap[tool] = min(names, key=lambda n: med([x[1] for x in res[(depth, n)]]))
            cc = [i[1] / f_[1] for i, f_ in zip(res[(depth, cheap["ioscale"])], res[(depth, cheap["fio"])])]
            summary.append((depth, best, iops_r, cpu_r, cheap, cc))
        log("\n| depth | ioscale best (IOPS) | fio best (IOPS) | IOPS ratio per round | median | CPU/op ratio of the two | least CPU/op: ioscale vs fio variant | ratio per round | median |")
        log("|---|---|---|---|---|---|---|---|---|")
        for depth, best, iops_r, cpu_r, cheap, cc in summary:
            log("| %d | %s | %s | %s | **%.3f** | %.3f | %s vs %s | %s | **%.3f** |" % (
                depth, best["ioscale"], best["fio"], " ".join("%.2f" % r for r in iops_r),
                med(iops_r), med(cpu_r), cheap["ioscale"], cheap["fio"],
                " ".join("%.2f" % r for r in cc), med(cc)))
    finally:
        subprocess.call(["rm", "-rf", d])


def meta_run(ex, mnt, eng, thr, depth, per, lay, js):
    """One `ioscale meta` run; {op: (files/s, files per CPU-second)}."""
    argv = [ex, "meta", "--engine", eng, "--iodepth", str(depth), "--threads", str(thr),
            "--files", str(per), "--file-size", "0", "--ops", "create,stat,delete",
            "--json", js, "-q"]
    if lay == "same":
        argv.append("--same-dir")
    elif lay == "spread":
        # One thread's files over `depth` directories, so creates in flight
        # do not queue on one directory's lock.
        argv += ["--files-per-dir", str(max(1, per // depth))]
    run(argv + [mnt])
    out = {}
    for ph in json.load(open(js))["phases"]:
        cpu = ph["cpu_user_s"] + ph["cpu_sys_s"]
        out[ph["op"]] = (ph["ops"] / ph["elapsed_s"], ph["ops"] / cpu if cpu > 0 else float("nan"))
    return out


def meta_part(a, tdir):
    ex = os.path.join(tdir, "release/ioscale")
    js = json_path()
    testfs = os.path.join(tdir, "debug/ioscale-testfs")
    # (engine, threads, depth, layout): "dirs" = a directory per thread,
    # "same" = every thread in one directory.
    configs = [("sync", 1, 1, "dirs"), ("sync", 2, 1, "dirs"), ("sync", 32, 1, "dirs"),
               ("sync", 32, 1, "same"), ("io_uring", 1, 1, "dirs"), ("io_uring", 1, 8, "dirs"),
               ("io_uring", 1, 32, "dirs"), ("io_uring", 1, 32, "spread"),
               ("io_uring", 2, 32, "dirs"), ("io_uring", 4, 8, "dirs")]
    for fs in ("tmpfs", "testfs"):
        mnt = tempfile.mkdtemp(prefix="ioscale-bench-meta-")
        src = tempfile.mkdtemp(prefix="ioscale-bench-src-", dir=a.data_dir)
        daemon = None
        try:
            if fs == "tmpfs":
                subprocess.check_call(["mount", "-t", "tmpfs", "-o", "size=2g", "tmpfs", mnt])
                total = a.meta_files
            else:
                daemon = subprocess.Popen([testfs, "-q", "--no-auto-unmount", "--meta-delay", "2ms",
                                           "--threads", "64", src, mnt])
                t0 = time.monotonic()
                while mnt not in open("/proc/self/mounts").read():
                    if time.monotonic() - t0 > 20:
                        raise RuntimeError("testfs did not mount")
                    time.sleep(0.05)
                total = a.meta_files_fuse
            res = {}
            for rnd in range(a.pairs + 1):
                k = rnd % len(configs)
                for eng, thr, depth, lay in configs[k:] + configs[:k]:
                    per = max(1, total // thr)
                    got = meta_run(ex, mnt, eng, thr, depth, per, lay, js)
                    if rnd == 0:
                        continue
                    for op, x in got.items():
                        res.setdefault((eng, thr, depth, lay, op), []).append(x)
            label = "fresh tmpfs" if fs == "tmpfs" else "ioscale-testfs --meta-delay 2ms --threads 64"
            log("\n### meta: %s, %d empty files in all per run, %d rounds (medians), load %s\n"
                % (label, total, a.pairs, open("/proc/loadavg").read().split()[0]))
            log("| engine | threads | depth | directories | create files/s | create files/CPU-s | stat files/s | stat files/CPU-s | delete files/s | delete files/CPU-s |")
            log("|---|---|---|---|---|---|---|---|---|---|")
            for eng, thr, depth, lay in configs:
                cells = []
                for op in ("create", "stat", "delete"):
                    xs = res[(eng, thr, depth, lay, op)]
                    cells += ["%.0f" % med([x[0] for x in xs]), "%.0f" % med([x[1] for x in xs])]
                where = {"dirs": "one per thread", "same": "one shared",
                         "spread": "%d per thread" % depth}[lay]
                log("| %s | %d | %d | %s | %s |" % (eng, thr, depth, where, " | ".join(cells)))
            a_ = res[("io_uring", 1, 32, "dirs", "create")]
            b_ = res[("sync", 32, 1, "dirs", "create")]
            c_ = res[("sync", 1, 1, "dirs", "create")]
            d_ = res[("sync", 32, 1, "same", "create")]
            log("\n- " + ratio_line("create rate, io_uring 1 thread depth 32 / sync 32 threads in one shared directory", a_, d_, 0))
            log("- " + ratio_line("create rate, io_uring 1 thread depth 32 / sync 32 threads (a directory each)", a_, b_, 0))
            log("- " + ratio_line("creates per CPU-second, io_uring 1x32 / sync 1 thread", a_, c_, 1))
            s_ = res[("io_uring", 1, 32, "spread", "create")]
            log("- " + ratio_line("create rate, io_uring 1 thread depth 32 over 32 directories / sync 32 threads (a directory each)", s_, b_, 0))
            log("- " + ratio_line("creates per CPU-second, io_uring 1x32 over 32 directories / sync 1 thread", s_, c_, 1))
        finally:
            subprocess.call(["umount", mnt])
            if daemon:
                daemon.terminate()
                daemon.wait()
            os.rmdir(mnt)
            subprocess.call(["rm", "-rf", src])


class TaskSampler:
    """Polls /proc/PID/task every 10 ms: each thread's name and CPU time
    (utime + stime, clock ticks), the last value seen per thread, and the
    most io-wq workers (threads named iou-wrk-*) alive at once."""

    def __init__(self, pid):
        import threading
        self.pid, self.cpu, self.names, self.peak_wrk = pid, {}, {}, 0
        self.done = threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        tick = os.sysconf("SC_CLK_TCK")
        base = "/proc/%d/task" % self.pid
        while not self.done.is_set():
            try:
                tids = os.listdir(base)
            except OSError:
                break
            wrk = 0
            for tid in tids:
                try:
                    st = open("%s/%s/stat" % (base, tid)).read()
                except OSError:
                    continue
                name = st[st.find("(") + 1:st.rfind(")")]
                f = st[st.rfind(")") + 2:].split()
                self.cpu[tid] = (int(f[11]) + int(f[12])) / tick
                self.names[tid] = name
                wrk += name.startswith("iou-wrk")
            self.peak_wrk = max(self.peak_wrk, wrk)
            time.sleep(0.01)

    def stop(self):
        self.done.set()
        self.t.join()
        w = sum(c for t, c in self.cpu.items() if self.names[t].startswith("iou-wrk"))
        n = sum(1 for t in self.names if self.names[t].startswith("iou-wrk"))
        return n, self.peak_wrk, w


def iowq_part(a, tdir):
    """Who does the work of a create, stat and delete on tmpfs: the io-wq
    cap and IOSQE_ASYNC against the synchronous engine, one op per run."""
    ex = os.path.join(tdir, "release/ioscale")
    js = json_path()
    depth = 32
    # (label, engine, env)
    cpus = os.cpu_count()
    configs = [("sync 1 thread", "sync", {}),
               ("io_uring default: cap=CPUs (%d) on a local fs" % cpus, "io_uring", {}),
               ("io_uring cap=depth (32)", "io_uring", {"IOSCALE_URING_IOWQ": "depth"}),
               ("io_uring cap=kernel default", "io_uring", {"IOSCALE_URING_IOWQ": "kernel"}),
               ("io_uring cap=CPUs +ASYNC", "io_uring", {"IOSCALE_URING_ASYNC": "1"}),
               ("io_uring cap=depth +ASYNC", "io_uring",
                {"IOSCALE_URING_IOWQ": "depth", "IOSCALE_URING_ASYNC": "1"})]
    ops = ("create", "stat", "delete")
    res = {}  # (label, op) -> [(files/s, files/CPU-s, iou-wrk threads, peak, wrk CPU share)]
    mnt = tempfile.mkdtemp(prefix="ioscale-bench-iowq-")
    try:
        for rnd in range(a.pairs + 1):
            k = rnd % len(configs)
            for label, eng, env in configs[k:] + configs[:k]:
                subprocess.check_call(["mount", "-t", "tmpfs", "-o", "size=2g", "tmpfs", mnt])
                try:
                    for op in ops:
                        argv = [ex, "meta", "--engine", eng,
                                "--iodepth", str(depth if eng == "io_uring" else 1),
                                "--threads", "1", "--files", str(a.meta_files),
                                "--file-size", "0", "--ops", op, "--json", js, "-q"]
                        if op != "delete":
                            argv.append("--keep")
                        e = dict(os.environ)
                        e.update(env)
                        p = subprocess.Popen(argv + [mnt], env=e, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.PIPE)
                        smp = TaskSampler(p.pid)
                        err = p.stderr.read()
                        n_wrk, peak, wrk_cpu = smp.stop()
                        _, status, ru = os.wait4(p.pid, 0)
                        if os.waitstatus_to_exitcode(status) != 0:
                            raise RuntimeError("failed: %s\n%s" % (" ".join(argv), err.decode()))
                        ph = [x for x in json.load(open(js))["phases"] if x["op"] == op][0]
                        cpu = ph["cpu_user_s"] + ph["cpu_sys_s"]
                        total = ru.ru_utime + ru.ru_stime
                        if rnd:
                            res.setdefault((label, op), []).append(
                                (ph["ops"] / ph["elapsed_s"], ph["ops"] / cpu if cpu > 0 else float("nan"),
                                 n_wrk, peak, wrk_cpu / total if total > 0 else 0.0))
                finally:
                    subprocess.call(["umount", mnt])
            if rnd:
                log("  iowq round %d of %d done" % (rnd, a.pairs))
    finally:
        os.rmdir(mnt)
    log("\n### io-wq: fresh tmpfs, 1 thread, depth %d, %d empty files, one op per run, %d rounds (medians), load %s\n"
        % (depth, a.meta_files, a.pairs, open("/proc/loadavg").read().split()[0]))
    log("| variant | op | files/s | files/CPU-s | ÷ sync files/CPU-s, per round | median | iou-wrk threads (peak alive) | iou-wrk share of process CPU |")
    log("|---|---|---|---|---|---|---|---|")
    for op in ops:
        base = res[("sync 1 thread", op)]
        for label, _, _ in configs:
            xs = res[(label, op)]
            r = [x[1] / b[1] for x, b in zip(xs, base)]
            log("| %s | %s | %.0f | %.0f | %s | **%.3f** | %d (%d) | %.0f%% |" % (
                label, op, med([x[0] for x in xs]), med([x[1] for x in xs]),
                " ".join("%.2f" % v for v in r), med(r), med([x[2] for x in xs]),
                med([x[3] for x in xs]), 100 * med([x[4] for x in xs])))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--target-dir", required=True)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--secs", type=float, default=2.0)
    p.add_argument("--depths", default="1,8,32,128")
    p.add_argument("--only", default="data,meta")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--meta-files", type=int, default=64000)
    p.add_argument("--meta-files-fuse", type=int, default=4096)
    a = p.parse_args()
    a.depths = [int(x) for x in a.depths.split(",")]
    a.data_dir = a.data_dir or os.path.join(a.target_dir, "")
    log("bench-uring: %s, kernel %s, %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                           os.uname().release,
                                           subprocess.run(["fio", "--version"], capture_output=True,
                                                          text=True).stdout.strip()))
    log("command: scripts/bench-uring " + " ".join(sys.argv[3:]))
    if "data" in a.only:
        data_part(a, a.target_dir)
    if "meta" in a.only:
        meta_part(a, a.target_dir)
    if "iowq" in a.only:
        iowq_part(a, a.target_dir)


if __name__ == "__main__":
    main()
