#!/usr/bin/env python3
"""Reader benchmarks of issue 2: figures and ratios, printed (never pass/fail, never a ctest).

  bench/run_reader_bench.py [--bin build/apps/acmetrace] [--dir .cache/bench] [--only wide,jobs,rss]

  wide  A Kalos-style GPU_UTIL.csv (Time + 2,345 GPU columns, 15 s rows; --wide-rows, default 12,000
        = 166 MB): `acmetrace replay --speed max --sink null` against `pandas.read_csv(file)`, warm
        page cache, alternated, --runs each (default 3). MB/s best and median; ratio (goal >= 10x).
  jobs  A Seren-format job trace (--job-rows, default 1,500,000): job events per second of
        `replay --speed max --sink null` (goal >= 1,000,000/s), and of `--sink stdout > /dev/null`.
  rss   A 2 GB wide file (--big-bytes) replayed with `--sink null` under `/usr/bin/time -v`:
        Maximum resident set size (goal <= 200 MB) and MB/s. The 2 GB file is deleted at the end
        (--keep-big keeps it).

Generated data goes to --dir (default .cache/bench, git-ignored; the 2 GB file under
/tmp/acmetrace-bench) and is reused by later runs. Wall times on a shared machine swing with the
load, so CPU seconds (user + sys of the child) are printed too, and the ratio on both.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

try:
    import pandas  # noqa: F401
except ImportError:
    # pyenv and virtualenv shims often hide the Debian python3-pandas: use the system python.
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit("run_reader_bench: needs pandas (Debian: apt-get install python3-pandas)")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GENERATOR = os.path.join(HERE, "make_wide_csv.py")


def log(msg=""):
    print(msg, flush=True)


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


def mb(n):
    return n / 1e6


def run_child(argv, stdout=subprocess.DEVNULL):
    """Runs argv; returns (wall s, cpu s, max RSS KB, stderr text). Raises on failure."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=stdout, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s" % (" ".join(argv), p.returncode, text[-2000:]))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, text


def warm(path):
    with open(path, "rb") as f:
        while f.read(8 << 20):
            pass


def generate(argv, out):
    if os.path.exists(out):
        log("  reusing %s (%.1f MB)" % (out, mb(os.path.getsize(out))))
        return
    log("  generating %s ..." % out)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, GENERATOR] + argv + ["--out", out], check=True)
    log("  generated in %.1f s" % (time.perf_counter() - t0))


def records_of(stderr_text):
    """The record count from replay's closing log line: '... INFO  replay: N records (...) in ...'."""
    m = re.findall(r" replay: (\d+) records", stderr_text)
    return int(m[-1]) if m else None


def summary(values):
    return min(values), statistics.median(values)


PANDAS_SNIPPET = r"""
import sys, time, pandas
t0 = time.perf_counter(); c0 = time.process_time()
df = pandas.read_csv(sys.argv[1])
print("%.6f %.6f %d %d" % (time.perf_counter() - t0, time.process_time() - c0, df.shape[0], df.shape[1]))
"""


def pandas_read(path):
    """pandas.read_csv in a fresh interpreter; times only the read_csv call (not the import)."""
    out = subprocess.run([sys.executable, "-c", PANDAS_SNIPPET, path], check=True, capture_output=True, text=True)
    wall, cpu, rows, cols = out.stdout.split()
    return float(wall), float(cpu), int(rows), int(cols)


def bench_wide(args):
    log("== 1. wide utilization CSV: acmetrace replay --sink null vs pandas.read_csv ==")
    data = os.path.join(args.dir, "wide-%d" % args.wide_rows)
    path = os.path.join(data, "data", "utilization", "kalos", "GPU_UTIL.csv")
    generate(["util", "--rows", str(args.wide_rows)], path)
    size = os.path.getsize(path)
    warm(path)
    cmd = [args.bin, "replay", "--data", data, "--speed", "max", "--sink", "null"]
    log("  file: %s, %.1f MB, %d rows x 2,346 columns" % (path, mb(size), args.wide_rows))
    log("  acmetrace: %s" % " ".join(cmd))
    log("  pandas:    pandas.read_csv(%r)  (pandas %s, only the call is timed)" % (path, pandas.__version__))
    log("  load average before: %s" % load())
    a_wall, a_cpu, p_wall, p_cpu = [], [], [], []
    records = None
    for i in range(args.runs):
        wall, cpu, _, err = run_child(cmd)
        records = records_of(err)
        a_wall.append(wall)
        a_cpu.append(cpu)
        pw, pc, rows, cols = pandas_read(path)
        p_wall.append(pw)
        p_cpu.append(pc)
        log("  run %d: acmetrace %.2f s wall (%.2f s CPU), pandas %.2f s wall (%.2f s CPU), %s records, df %dx%d"
            % (i + 1, wall, cpu, pw, pc, records, rows, cols))
    log("  load average after: %s" % load())
    (ab, am), (pb, pm) = summary(a_wall), summary(p_wall)
    (acb, acm), (pcb, pcm) = summary(a_cpu), summary(p_cpu)
    log("  acmetrace: best %.2f s = %.0f MB/s, median %.2f s = %.0f MB/s  (CPU: best %.2f s = %.0f MB/s)"
        % (ab, mb(size) / ab, am, mb(size) / am, acb, mb(size) / acb))
    log("  pandas:    best %.2f s = %.0f MB/s, median %.2f s = %.0f MB/s  (CPU: best %.2f s = %.0f MB/s)"
        % (pb, mb(size) / pb, pm, mb(size) / pm, pcb, mb(size) / pcb))
    log("  RATIO acmetrace/pandas: wall best %.1fx, wall median %.1fx, CPU best %.1fx  (goal >= 10x)"
        % (pb / ab, pm / am, pcb / acb))
    return {"wide_mb_s": mb(size) / ab, "pandas_mb_s": mb(size) / pb, "ratio": pb / ab}


def bench_jobs(args):
    log("== 2. job trace: job events per second ==")
    data = os.path.join(args.dir, "jobs-%d" % args.job_rows)
    path = os.path.join(data, "data", "job_trace", "trace_seren.csv")
    generate(["jobs", "--rows", str(args.job_rows)], path)
    size = os.path.getsize(path)
    warm(path)
    log("  file: %s, %.1f MB, %d job rows" % (path, mb(size), args.job_rows))
    log("  load average before: %s" % load())
    results = {}
    for sink in ("null", "stdout"):
        cmd = [args.bin, "replay", "--data", data, "--speed", "max", "--sink", sink]
        log("  %s%s" % (" ".join(cmd), " > /dev/null" if sink == "stdout" else ""))
        walls, cpus = [], []
        records = None
        for i in range(args.runs):
            wall, cpu, _, err = run_child(cmd)
            records = records_of(err)
            walls.append(wall)
            cpus.append(cpu)
            log("    run %d: %.2f s wall (%.2f s CPU), %s events = %.2f M events/s"
                % (i + 1, wall, cpu, records, (records or 0) / wall / 1e6))
        best, med = summary(walls)
        log("    sink %s: best %.2f M events/s, median %.2f M events/s (%.0f MB/s best; CPU best %.2f M events/s)"
            % (sink, records / best / 1e6, records / med / 1e6, mb(size) / best, records / min(cpus) / 1e6))
        results[sink] = records / best
    log("  load average after: %s" % load())
    log("  EVENTS/S (sink null, best): %.2f M/s  (goal >= 1.0 M/s)" % (results["null"] / 1e6))
    return results


def bench_rss(args):
    log("== 3. peak RSS replaying a %s wide file (--sink null) ==" % args.big_bytes)
    time_bin = "/usr/bin/time"
    if not os.path.exists(time_bin):
        sys.exit("run_reader_bench: /usr/bin/time missing (Debian: apt-get install time)")
    data = args.big_dir
    path = os.path.join(data, "data", "utilization", "kalos", "GPU_UTIL.csv")
    free = shutil.disk_usage(os.path.dirname(os.path.dirname(path)) if os.path.exists(path) else "/tmp").free
    if not os.path.exists(path) and free < 3e9:
        sys.exit("run_reader_bench: less than 3 GB free for the big file")
    try:
        generate(["util", "--bytes", args.big_bytes], path)
        size = os.path.getsize(path)
        warm(path)  # the cache may not hold it all; then the run reads from disk, as a real one would
        cmd = [time_bin, "-v", args.bin, "replay", "--data", data, "--speed", "max", "--sink", "null"]
        log("  file: %s, %.1f MB" % (path, mb(size)))
        log("  %s" % " ".join(cmd))
        log("  load average before: %s" % load())
        wall, cpu, ru_kb, err = run_child(cmd)
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
        rss_kb = int(m.group(1)) if m else ru_kb
        log("  wall %.2f s (%.2f s CPU) = %.0f MB/s, %s records" % (wall, cpu, mb(size) / wall, records_of(err)))
        log("  PEAK RSS (/usr/bin/time -v, Maximum resident set size): %d kB = %.1f MB  (goal <= 200 MB)"
            % (rss_kb, rss_kb / 1024))
        log("  load average after: %s" % load())
        return {"rss_kb": rss_kb, "mb_s": mb(size) / wall}
    finally:
        if not args.keep_big and os.path.exists(path):
            os.remove(path)
            log("  removed %s" % path)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "apps", "acmetrace"))
    p.add_argument("--dir", default=os.path.join(ROOT, ".cache", "bench"), help="generated data (reused)")
    p.add_argument("--big-dir", default="/tmp/acmetrace-bench/big", help="where the 2 GB file goes")
    p.add_argument("--only", default="wide,jobs,rss", help="comma-separated: wide, jobs, rss")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--wide-rows", type=int, default=12000)
    p.add_argument("--job-rows", type=int, default=1500000)
    p.add_argument("--big-bytes", default="2G")
    p.add_argument("--keep-big", action="store_true", help="keep the 2 GB file for another run")
    args = p.parse_args()
    if not os.access(args.bin, os.X_OK):
        sys.exit("run_reader_bench: %s not built (scripts/build)" % args.bin)
    log("run_reader_bench: %s, %d CPUs, %s" % (args.bin, os.cpu_count(), time.strftime("%Y-%m-%d %H:%M:%S")))
    only = set(args.only.split(","))
    unknown = only - {"wide", "jobs", "rss"}
    if unknown:
        sys.exit("run_reader_bench: unknown --only item(s): %s" % ", ".join(sorted(unknown)))
    results = {}
    if "wide" in only:
        results["wide"] = bench_wide(args)
    if "jobs" in only:
        results["jobs"] = bench_jobs(args)
    if "rss" in only:
        results["rss"] = bench_rss(args)
    log("== summary (wall-clock, best run; load average now %s) ==" % load())
    if "wide" in results:
        w = results["wide"]
        log("  wide CSV: acmetrace %.0f MB/s, pandas %.0f MB/s, ratio %.1fx (goal >= 10x)"
            % (w["wide_mb_s"], w["pandas_mb_s"], w["ratio"]))
    if "jobs" in results:
        j = results["jobs"]
        log("  job trace: %.2f M events/s to null, %.2f M events/s to stdout (goal >= 1 M/s to null)"
            % (j["null"] / 1e6, j["stdout"] / 1e6))
    if "rss" in results:
        r = results["rss"]
        log("  2 GB wide file: peak RSS %.1f MB (goal <= 200 MB), %.0f MB/s" % (r["rss_kb"] / 1024, r["mb_s"]))


if __name__ == "__main__":
    main()
