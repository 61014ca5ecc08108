#!/usr/bin/env python3
"""Speed benchmark of ioscale against fio (and a bare pread loop).

Runs the tools interleaved (A B B A A B ..., alternating who goes first) on the same workloads and reports
the ratio of every pair and the median ratio per workload. Called by
scripts/bench, which builds the binaries first. Standard library only.

Workloads:
  a  4 KiB random reads of a page-cached 1 GiB file, 1 worker, sync engine:
     CPU seconds per op of ioscale, fio (psync) and a bare pread loop.
  b  1 MiB sequential write then read on a fresh tmpfs, 1 and 2 workers:
     bandwidth ratio ioscale / fio.
  c  4 KiB random O_DIRECT reads with io_uring at depth 32 on the ext4 of
     /work: IOPS ratio ioscale / fio.
  f  the same fio command line run by fio and by `ioscale fio` (fio's syntax
     and output on ioscale's engine): 4 KiB random O_DIRECT reads, io_uring
     depth 32, on ext4; 1 MiB sequential writes, 2 jobs, on tmpfs; a 4 KiB
     random 50/50 mix, psync, on tmpfs. Bandwidth ratio ioscale fio / fio,
     both read from fio's JSON.

CPU and peak RSS come from the rusage that wait4() returns for each child
(the child and every descendant it waited for), the same measure for every
tool; each tool's own in-phase CPU figure is shown beside it.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

GIB = 1 << 30
MIB = 1 << 20


def log(msg=""):
    print(msg, flush=True)


class Runner:
    """Runs one command, capturing stdout and its rusage."""

    def __init__(self, verbose=False):
        self.verbose = verbose

    def run(self, argv, check=True):
        if self.verbose:
            log("  $ " + " ".join(argv))
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # Read the pipes fully before reaping, so a big output cannot block.
        out, err = p.stdout.read(), p.stderr.read()
        p.stdout.close()
        p.stderr.close()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        if check and p.returncode != 0:
            raise RuntimeError(
                "command failed (%d): %s\n%s" % (p.returncode, " ".join(argv), err.decode(errors="replace"))
            )
        return {
            "stdout": out.decode(errors="replace"),
            "stderr": err.decode(errors="replace"),
            "user_s": ru.ru_utime,
            "sys_s": ru.ru_stime,
            "cpu_s": ru.ru_utime + ru.ru_stime,
            "maxrss_kib": ru.ru_maxrss,
            "wall_s": wall,
        }


def fio_json(text):
    # fio may print notes before the JSON document; start at the first brace.
    i = text.find("{")
    if i < 0:
        raise RuntimeError("no JSON in fio output:\n" + text[:2000])
    return json.loads(text[i:])


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    """(min, max, relative half-range of the median) of a list of ratios."""
    if not xs:
        return (float("nan"),) * 3
    m = median(xs)
    return (min(xs), max(xs), (max(xs) - min(xs)) / 2 / m if m else float("nan"))


class Bench:
    def __init__(self, args):
        self.a = args
        self.r = Runner(args.verbose)
        self.ioscale = os.path.join(args.target_dir, "release", "ioscale")
        self.bare = os.path.join(args.target_dir, "release", "examples", "bare_pread")
        self.fio = args.fio
        self.results = {"pairs": args.pairs, "workloads": {}}
        self.workdir = None  # fresh directory on /work for workloads a and c
        self.mnt = None  # tmpfs mount point for workload b
        self.mounted = False

    # ---------------------------------------------------------------- set-up

    def make_file(self):
        self.workdir = tempfile.mkdtemp(prefix="ioscale-bench.", dir=self.a.disk_dir)
        log("laying out a 1 GiB file in %s (ioscale write --keep)" % self.workdir)
        self.r.run([self.ioscale, "run", "--op", "write", "--keep", "--size", "1g", "--xfer", "1m",
                    "--quiet", self.workdir])
        self.file = os.path.join(self.workdir, "ioscale.d", "file.00000000")
        if os.path.getsize(self.file) != GIB:
            raise RuntimeError("unexpected size of " + self.file)

    def cache_file(self):
        with open(self.file, "rb", buffering=0) as f:
            while f.read(8 * MIB):
                pass

    def mount_tmpfs(self):
        self.mnt = tempfile.mkdtemp(prefix="ioscale-bench-tmpfs.", dir="/mnt")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3g", "tmpfs", self.mnt], check=True)
        self.mounted = True
        log("mounted a fresh 3 GiB tmpfs on %s" % self.mnt)

    def cleanup(self):
        if self.mounted:
            subprocess.run(["umount", self.mnt], check=False)
            self.mounted = False
        if self.mnt and os.path.isdir(self.mnt):
            try:
                os.rmdir(self.mnt)
            except OSError as e:
                log("cleanup: cannot remove %s: %s" % (self.mnt, e))
        if self.workdir and os.path.isdir(self.workdir):
            subprocess.run([self.ioscale, "clean", self.workdir], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir = None

    # ----------------------------------------------------------- workload a

    def cmd_a(self, tool, seed):
        if tool == "ioscale":
            return [self.ioscale, "run", "--op", "randread", "--xfer", "4k", "--size", "1g",
                    "--seed", str(seed), "--format", "json", self.workdir]
        if tool == "fio":
            return [self.fio, "--name=a", "--filename=" + self.file, "--size=1g", "--bs=4k",
                    "--rw=randread", "--ioengine=psync", "--invalidate=0", "--randseed=%d" % seed,
                    "--output-format=json"]
        return [self.bare, self.file, "4k", "1g", str(seed)]

    def run_a_one(self, tool, seed):
        res = self.r.run(self.cmd_a(tool, seed))
        if tool == "ioscale":
            ph = json.loads(res["stdout"])["phases"][0]
            ops = ph["ops"]
            inphase = ph["cpu_user_s"] + ph["cpu_sys_s"]
        elif tool == "fio":
            j = fio_json(res["stdout"])["jobs"][0]
            ops = j["read"]["total_ios"]
            inphase = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * j["job_runtime"] / 1000.0
        else:
            kv = dict(x.split("=", 1) for x in res["stdout"].split())
            ops = int(kv["ops"])
            inphase = float(kv["loop_user_s"]) + float(kv["loop_sys_s"])
        if ops != GIB // 4096:
            raise RuntimeError("%s did %d ops, expected %d" % (tool, ops, GIB // 4096))
        return {
            "ops": ops,
            "cpu_ns_per_op": res["cpu_s"] / ops * 1e9,
            "inphase_ns_per_op": inphase / ops * 1e9,
            "user_s": res["user_s"],
            "sys_s": res["sys_s"],
            "wall_s": res["wall_s"],
            "maxrss_kib": res["maxrss_kib"],
        }

    def workload_a(self):
        log("\n== (a) 4 KiB random reads, page-cached 1 GiB file, 1 worker, sync: CPU per op ==")
        log("   (whole-process CPU from wait4 rusage, start-up included; [in-phase] = tool's own loop figure)")
        self.cache_file()
        tools = ["ioscale", "fio", "bare"]
        for t in tools:  # warm-up, not recorded
            self.run_a_one(t, 1)
        pairs = []
        for i in range(self.a.pairs):
            seed = 1000 + i
            self.cache_file()
            # Rotate the order so no tool always runs first (or right after
            # the same neighbour) in a pair.
            order = tools[i % 3:] + tools[:i % 3]
            row = {t: self.run_a_one(t, seed) for t in order}
            row["ioscale/bare"] = row["ioscale"]["cpu_ns_per_op"] / row["bare"]["cpu_ns_per_op"]
            row["ioscale/fio"] = row["ioscale"]["cpu_ns_per_op"] / row["fio"]["cpu_ns_per_op"]
            row["inphase ioscale/bare"] = row["ioscale"]["inphase_ns_per_op"] / row["bare"]["inphase_ns_per_op"]
            row["inphase ioscale/fio"] = row["ioscale"]["inphase_ns_per_op"] / row["fio"]["inphase_ns_per_op"]
            pairs.append(row)
            log("  pair %d: ns/op ioscale %.0f [%.0f]  fio %.0f [%.0f]  bare %.0f [%.0f]   "
                "ioscale/bare %.3f [%.3f]  ioscale/fio %.3f [%.3f]  ioscale RSS %d KiB" % (
                    i + 1,
                    row["ioscale"]["cpu_ns_per_op"], row["ioscale"]["inphase_ns_per_op"],
                    row["fio"]["cpu_ns_per_op"], row["fio"]["inphase_ns_per_op"],
                    row["bare"]["cpu_ns_per_op"], row["bare"]["inphase_ns_per_op"],
                    row["ioscale/bare"], row["inphase ioscale/bare"],
                    row["ioscale/fio"], row["inphase ioscale/fio"],
                    row["ioscale"]["maxrss_kib"]))
        summary = {}
        for k in ["ioscale/bare", "inphase ioscale/bare", "ioscale/fio", "inphase ioscale/fio"]:
            xs = [p[k] for p in pairs]
            summary[k] = {"ratios": xs, "median": median(xs), "spread": spread(xs)}
            log("  median %-22s %.3f  (min %.3f, max %.3f)" % (k, summary[k]["median"], *summary[k]["spread"][:2]))
        summary["ioscale_maxrss_kib"] = max(p["ioscale"]["maxrss_kib"] for p in pairs)
        for t in tools:
            summary["median ns/op " + t] = median([p[t]["cpu_ns_per_op"] for p in pairs])
            summary["median in-phase ns/op " + t] = median([p[t]["inphase_ns_per_op"] for p in pairs])
        summary["goal"] = "ioscale/bare <= 1.10"
        summary["met"] = summary["ioscale/bare"]["median"] <= 1.10
        self.results["workloads"]["a"] = {"pairs": pairs, "summary": summary,
                                          "commands": {t: self.cmd_a(t, 1000) for t in tools}}

    # ----------------------------------------------------------- workload b

    def cmd_b_ioscale(self, n, seed):
        return [self.ioscale, "run", "--op", "write,read", "--threads", str(n), "--size", "1g",
                "--xfer", "1m", "--layout", "per-thread", "--seed", str(seed), "--format", "json",
                os.path.join(self.mnt, "ioscale")]

    def cmd_b_fio(self, n, rw):
        return [self.fio, "--name=seq", "--directory=" + os.path.join(self.mnt, "fio"), "--rw=" + rw,
                "--bs=1m", "--size=1g", "--numjobs=%d" % n, "--group_reporting", "--ioengine=psync",
                "--fallocate=none", "--output-format=json"]

    def run_b_ioscale(self, n, seed):
        d = os.path.join(self.mnt, "ioscale")
        os.makedirs(d, exist_ok=True)
        res = self.r.run(self.cmd_b_ioscale(n, seed))
        phases = json.loads(res["stdout"])["phases"]
        out = {"maxrss_kib": res["maxrss_kib"], "cpu_s": res["cpu_s"]}
        for ph in phases:
            if ph["bytes"] != n * GIB:
                raise RuntimeError("ioscale %s moved %d bytes" % (ph["op"], ph["bytes"]))
            out[ph["op"]] = ph["bw_mib_s"] * MIB
        os.rmdir(d)
        return out

    def run_b_fio(self, n):
        d = os.path.join(self.mnt, "fio")
        os.makedirs(d, exist_ok=True)
        out = {"cpu_s": 0.0}
        try:
            for rw, key in (("write", "write"), ("read", "read")):
                res = self.r.run(self.cmd_b_fio(n, rw))
                j = fio_json(res["stdout"])["jobs"][0]
                if j[key]["io_bytes"] != n * GIB:
                    raise RuntimeError("fio %s moved %d bytes" % (rw, j[key]["io_bytes"]))
                out[rw] = float(j[key]["bw_bytes"])
                out["cpu_s"] += res["cpu_s"]
        finally:
            shutil.rmtree(d, ignore_errors=True)
        return out

    def workload_b(self):
        log("\n== (b) 1 MiB sequential write then read on tmpfs: bandwidth ioscale / fio ==")
        self.mount_tmpfs()
        for n in (1, 2):  # warm-up: first touch of tmpfs pages, not recorded
            self.run_b_ioscale(n, 1)
            self.run_b_fio(n)
        for n in (1, 2):
            pairs = []
            for i in range(self.a.pairs):
                # Alternate which tool goes first in a pair.
                if i % 2 == 0:
                    io = self.run_b_ioscale(n, 2000 + i)
                    fo = self.run_b_fio(n)
                else:
                    fo = self.run_b_fio(n)
                    io = self.run_b_ioscale(n, 2000 + i)
                row = {"ioscale": io, "fio": fo,
                       "write": io["write"] / fo["write"], "read": io["read"] / fo["read"]}
                pairs.append(row)
                log("  %d worker(s) pair %d: write MiB/s ioscale %.0f fio %.0f ratio %.3f | "
                    "read MiB/s ioscale %.0f fio %.0f ratio %.3f | ioscale RSS %d KiB" % (
                        n, i + 1, io["write"] / MIB, fo["write"] / MIB, row["write"],
                        io["read"] / MIB, fo["read"] / MIB, row["read"], io["maxrss_kib"]))
            summary = {}
            for k in ("write", "read"):
                xs = [p[k] for p in pairs]
                summary[k] = {"ratios": xs, "median": median(xs), "spread": spread(xs),
                              "median_ioscale_mib_s": median([p["ioscale"][k] / MIB for p in pairs]),
                              "median_fio_mib_s": median([p["fio"][k] / MIB for p in pairs])}
                log("  %d worker(s) median %s ratio %.3f  (min %.3f, max %.3f)" % (
                    n, k, summary[k]["median"], *summary[k]["spread"][:2]))
            summary["ioscale_maxrss_kib"] = max(p["ioscale"]["maxrss_kib"] for p in pairs)
            summary["goal"] = "ratio >= 1.0"
            summary["met"] = all(summary[k]["median"] >= 1.0 for k in ("write", "read"))
            self.results["workloads"]["b%d" % n] = {
                "pairs": pairs, "summary": summary,
                "commands": {"ioscale": self.cmd_b_ioscale(n, 2000),
                             "fio write": self.cmd_b_fio(n, "write"),
                             "fio read": self.cmd_b_fio(n, "read")}}
        subprocess.run(["umount", self.mnt], check=True)
        self.mounted = False
        os.rmdir(self.mnt)
        self.mnt = None

    # ----------------------------------------------------------- workload c

    def cmd_c(self, tool, seed):
        if tool == "ioscale":
            return [self.ioscale, "run", "--op", "randread", "--xfer", "4k", "--size", "1g", "--direct",
                    "--engine", "io_uring", "--iodepth", "32", "--seed", str(seed), "--format", "json",
                    self.workdir]
        return [self.fio, "--name=c", "--filename=" + self.file, "--size=1g", "--bs=4k", "--rw=randread",
                "--ioengine=io_uring", "--direct=1", "--iodepth=32", "--randseed=%d" % seed,
                "--output-format=json"]

    def run_c_one(self, tool, seed):
        res = self.r.run(self.cmd_c(tool, seed))
        if tool == "ioscale":
            ph = json.loads(res["stdout"])["phases"][0]
            ops, iops = ph["ops"], ph["iops"]
        else:
            j = fio_json(res["stdout"])["jobs"][0]
            ops, iops = j["read"]["total_ios"], j["read"]["iops"]
        if ops != GIB // 4096:
            raise RuntimeError("%s did %d ops" % (tool, ops))
        return {"iops": iops, "maxrss_kib": res["maxrss_kib"], "cpu_s": res["cpu_s"],
                "wall_s": res["wall_s"]}

    def workload_c(self):
        log("\n== (c) 4 KiB random O_DIRECT reads, io_uring depth 32, 1 GiB on ext4 (%s): IOPS ioscale / fio =="
            % self.a.disk_dir)
        log("   (one full pass over the file each run: 262144 requests, every block once)")
        self.run_c_one("ioscale", 1)  # warm-up, not recorded
        self.run_c_one("fio", 1)
        pairs = []
        for i in range(self.a.pairs):
            if i % 2 == 0:  # alternate which tool goes first
                io = self.run_c_one("ioscale", 3000 + i)
                fo = self.run_c_one("fio", 3000 + i)
            else:
                fo = self.run_c_one("fio", 3000 + i)
                io = self.run_c_one("ioscale", 3000 + i)
            row = {"ioscale": io, "fio": fo, "ratio": io["iops"] / fo["iops"]}
            pairs.append(row)
            log("  pair %d: IOPS ioscale %.0f fio %.0f ratio %.3f | CPU s ioscale %.2f fio %.2f | ioscale RSS %d KiB" % (
                i + 1, io["iops"], fo["iops"], row["ratio"], io["cpu_s"], fo["cpu_s"], io["maxrss_kib"]))
        xs = [p["ratio"] for p in pairs]
        summary = {"ratio": {"ratios": xs, "median": median(xs), "spread": spread(xs)},
                   "median_ioscale_iops": median([p["ioscale"]["iops"] for p in pairs]),
                   "median_fio_iops": median([p["fio"]["iops"] for p in pairs]),
                   "ioscale_maxrss_kib": max(p["ioscale"]["maxrss_kib"] for p in pairs),
                   "goal": "ratio >= 0.97"}
        summary["met"] = summary["ratio"]["median"] >= 0.97
        log("  median ratio %.3f  (min %.3f, max %.3f)" % (summary["ratio"]["median"], *summary["ratio"]["spread"][:2]))
        self.results["workloads"]["c"] = {"pairs": pairs, "summary": summary,
                                          "commands": {t: self.cmd_c(t, 3000) for t in ("ioscale", "fio")}}

    # ----------------------------------------------------------- workload f

    F_JOBS = [
        ("f1 randread 4k O_DIRECT io_uring qd32, ext4", "disk",
         ["--rw=randread", "--bs=4k", "--size=256m", "--direct=1", "--ioengine=io_uring", "--iodepth=32"]),
        ("f2 write 1m, 2 jobs, tmpfs", "tmpfs",
         ["--rw=write", "--bs=1m", "--size=512m", "--numjobs=2", "--group_reporting"]),
        ("f3 randrw 4k psync, tmpfs", "tmpfs",
         ["--rw=randrw", "--bs=4k", "--size=64m"]),
    ]

    def cmd_f(self, tool, opts, d, seed):
        head = [self.fio] if tool == "fio" else [self.ioscale, "fio"]
        return head + ["--name=f", "--directory=" + d, "--randseed=%d" % seed,
                       "--output-format=json"] + opts

    def run_f_one(self, tool, opts, d, seed):
        res = self.r.run(self.cmd_f(tool, opts, d, seed))
        jobs = fio_json(res["stdout"])["jobs"]
        ios = sum(j[x]["total_ios"] for j in jobs for x in ("read", "write"))
        bw = sum(j[x]["bw_bytes"] for j in jobs for x in ("read", "write"))
        return {"bw_bytes": bw, "ios": ios, "cpu_s": res["cpu_s"], "maxrss_kib": res["maxrss_kib"]}

    def workload_f(self):
        log("\n== (f) fio command lines: fio against `ioscale fio`, bandwidth ratio ioscale fio / fio ==")
        if not self.mounted:
            self.mount_tmpfs()
        base = {"disk": tempfile.mkdtemp(prefix="ioscale-bench-f.", dir=self.a.disk_dir),
                "tmpfs": self.mnt}
        summaries = {}
        try:
            for name, where, opts in self.F_JOBS:
                dirs = {}
                for tool in ("fio", "ioscale"):
                    dirs[tool] = os.path.join(base[where], "f-" + tool + "-" + name.split()[0])
                    os.makedirs(dirs[tool], exist_ok=True)
                    self.run_f_one(tool, opts, dirs[tool], 1)  # warm-up and layout, not recorded
                pairs = []
                for i in range(self.a.pairs):
                    order = ("ioscale", "fio") if i % 2 == 0 else ("fio", "ioscale")
                    got = {t: self.run_f_one(t, opts, dirs[t], 5000 + i) for t in order}
                    if got["ioscale"]["ios"] != got["fio"]["ios"]:
                        raise RuntimeError("%s: ioscale fio did %d I/Os, fio %d" % (
                            name, got["ioscale"]["ios"], got["fio"]["ios"]))
                    row = {"ioscale": got["ioscale"], "fio": got["fio"],
                           "ratio": got["ioscale"]["bw_bytes"] / got["fio"]["bw_bytes"]}
                    pairs.append(row)
                    log("  %s pair %d: MiB/s ioscale fio %.0f fio %.0f ratio %.3f" % (
                        name.split()[0], i + 1, got["ioscale"]["bw_bytes"] / MIB,
                        got["fio"]["bw_bytes"] / MIB, row["ratio"]))
                xs = [p["ratio"] for p in pairs]
                summaries[name] = {
                    "ratio": {"ratios": xs, "median": median(xs), "spread": spread(xs)},
                    "median_ioscale_mib_s": median([p["ioscale"]["bw_bytes"] / MIB for p in pairs]),
                    "median_fio_mib_s": median([p["fio"]["bw_bytes"] / MIB for p in pairs]),
                    "ioscale_maxrss_kib": max(p["ioscale"]["maxrss_kib"] for p in pairs),
                    "commands": {t: self.cmd_f(t, opts, "DIR", 5000) for t in ("ioscale", "fio")},
                    "pairs": pairs}
                log("  %s: median ratio %.3f (min %.3f, max %.3f), medians %.0f vs %.0f MiB/s" % (
                    name, summaries[name]["ratio"]["median"], *summaries[name]["ratio"]["spread"][:2],
                    summaries[name]["median_ioscale_mib_s"], summaries[name]["median_fio_mib_s"]))
        finally:
            shutil.rmtree(base["disk"], ignore_errors=True)
            for d in os.listdir(self.mnt):
                shutil.rmtree(os.path.join(self.mnt, d), ignore_errors=True)
        self.results["workloads"]["f"] = summaries

    # ------------------------------------------------------------- report

    def table(self):
        w = self.results["workloads"]
        log("\n== summary: %d interleaved pairs per workload ==" % self.a.pairs)
        log("%-44s %-10s %8s %8s %8s %8s  %s" % ("workload", "ratio", "median", "min", "max", "RSS MiB", "goal"))

        def line(name, what, s, rss, goal, met):
            log("%-44s %-10s %8.3f %8.3f %8.3f %8.1f  %s %s" % (
                name, what, s["median"], s["spread"][0], s["spread"][1], rss / 1024.0, goal,
                "met" if met else "NOT met"))

        if "a" in w:
            s = w["a"]["summary"]
            line("a randread 4k cached, CPU/op (whole process)", "io/bare", s["ioscale/bare"],
                 s["ioscale_maxrss_kib"], "<= 1.10", s["ioscale/bare"]["median"] <= 1.10)
            line("a randread 4k cached, CPU/op (in phase)", "io/bare", s["inphase ioscale/bare"],
                 s["ioscale_maxrss_kib"], "<= 1.10", s["inphase ioscale/bare"]["median"] <= 1.10)
            line("a randread 4k cached, CPU/op (whole process)", "io/fio", s["ioscale/fio"],
                 s["ioscale_maxrss_kib"], "(info)", True)
        for n in (1, 2):
            k = "b%d" % n
            if k in w:
                s = w[k]["summary"]
                for op in ("write", "read"):
                    line("b seq %s 1m tmpfs, %d worker(s), bandwidth" % (op, n), "io/fio", s[op],
                         s["ioscale_maxrss_kib"], ">= 1.00", s[op]["median"] >= 1.0)
        if "c" in w:
            s = w["c"]["summary"]
            line("c randread 4k O_DIRECT io_uring qd32, IOPS", "io/fio", s["ratio"],
                 s["ioscale_maxrss_kib"], ">= 0.97", s["met"])
        for name, s in w.get("f", {}).items():
            line(name + ", bandwidth", "iofio/fio", s["ratio"], s["ioscale_maxrss_kib"], "(info)", True)
        log("(ratios of CPU/op: lower is better for ioscale; bandwidth and IOPS: higher is better)")

    def main(self):
        self.results["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        self.results["kernel"] = platform.release()
        self.results["cpus"] = os.cpu_count()
        self.results["fio"] = subprocess.run([self.fio, "--version"], capture_output=True,
                                             text=True).stdout.strip()
        log("ioscale speed benchmark  %s  kernel %s  %d CPUs  %s  %d interleaved pairs" % (
            self.results["date"], self.results["kernel"], self.results["cpus"], self.results["fio"],
            self.a.pairs))
        only = set(self.a.only.split(","))
        try:
            if only & {"a", "c"}:
                self.make_file()
            if "a" in only:
                self.workload_a()
            if "b" in only:
                self.workload_b()
            if "c" in only:
                self.workload_c()
            if "f" in only:
                self.workload_f()
        finally:
            self.cleanup()
        self.table()
        if self.a.out:
            with open(self.a.out, "w") as f:
                json.dump(self.results, f, indent=1)
            log("raw results written to " + self.a.out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=5, help="interleaved pairs per workload (default 5)")
    p.add_argument("--quick", action="store_true", help="2 pairs")
    p.add_argument("--only", default="a,b,c,f", help="workloads to run, comma list of a, b, c, f")
    p.add_argument("--disk-dir", default="/work", help="ext4 directory for workloads a and c")
    p.add_argument("--target-dir", default="target", help="cargo target directory")
    p.add_argument("--fio", default="fio")
    p.add_argument("--out", help="write the raw results as JSON to this file")
    p.add_argument("-v", "--verbose", action="store_true", help="print every command")
    args = p.parse_args()
    if args.quick:
        args.pairs = 2
    if args.pairs < 1:
        p.error("--pairs must be at least 1")
    b = Bench(args)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        b.main()
    except KeyboardInterrupt:
        log("interrupted; cleaned up")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
