#!/usr/bin/env python3
"""Synthetic AcmeTrace-format inputs for the reader benchmarks (bench/README.md).

  make_wide_csv.py util --out FILE (--rows N | --bytes SIZE) [--columns 2345] [--seed S]
      A wide DCGM utilization file as the release writes it: `Time` (unix seconds, every 15 s)
      then one column per GPU named `10.140.X.Y-G` (G = 0..7, the last node partial), cells with
      up to 3 decimals (`57.123`, `0.0`, `100.0`), a few empty (no sample). Values follow the real
      Kalos GPU_UTIL distribution (about a quarter 0, a quarter 100) with a fractional jitter.

  make_wide_csv.py jobs --out FILE --rows N [--seed S]
      A Seren-format job trace: rows in submit order, times like `2023-03-01 00:18:22+08:00`,
      queue 0-600 s, durations 10 s - 1 day, some jobs never started (empty start_time).

Python + numpy: `util` writes about 30 MB/s on an idle core (2 GB in 1-2 minutes; 5-6 minutes on a loaded
2-core machine); `jobs` writes 1.5 M rows in about 10 s of CPU.
Deterministic for a given seed. Writes FILE.tmp and renames it, so a killed run leaves no
half-written FILE that a later run would take as done.
"""
import argparse
import os
import sys

try:
    import numpy as np
except ImportError:
    # pyenv and virtualenv shims often hide Debian's python3-numpy: use the system python.
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

SAMPLE_SECONDS = 15
UTIL_START = 1688169600  # 2023-07-01 00:00:00 UTC, as in the release's Kalos logs
EMPTY_FRACTION = 0.005  # cells with no sample


def parse_size(text):
    units = {"k": 10**3, "m": 10**6, "g": 10**9, "kb": 10**3, "mb": 10**6, "gb": 10**9}
    t = text.strip().lower()
    for suffix in sorted(units, key=len, reverse=True):
        if t.endswith(suffix):
            return int(float(t[: -len(suffix)]) * units[suffix])
    return int(t)


def gpu_columns(count):
    """`10.140.X.Y-G` for `count` GPUs, 8 per node, nodes in the release's address style."""
    names = []
    node = 0
    while len(names) < count:
        ip = "10.140.%d.%d" % (1 + node // 120, 10 + node % 120)
        for g in range(8):
            if len(names) == count:
                break
            names.append("%s-%d" % (ip, g))
        node += 1
    return names


def kalos_gpu_util_quantiles():
    """The release's measured GPU_UTIL quantiles for Kalos (1000 points), or a polarized stand-in."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("ACMETRACE_CDF", ""), "/work/shared/data/acmetrace/utilization_cdf.csv",
                  os.path.join(here, "..", "data", "utilization_cdf.csv")]
    for path in candidates:
        if path and os.path.isfile(path):
            vals = []
            with open(path) as f:
                for line in f:
                    p = line.rstrip("\n").split(",")
                    if len(p) == 5 and p[0] == "kalos" and p[1] == "GPU_UTIL":
                        vals.append(float(p[4]))
            if len(vals) >= 100:
                return np.array(sorted(vals))
    # About 26% zeros, 24% 100, the rest skewed high (as the paper reports).
    q = np.linspace(0, 1, 1000)
    return np.where(q < 0.26, 0.0, np.where(q > 0.76, 100.0, 100 * ((q - 0.26) / 0.5) ** 0.3))


def cell_table():
    """Text of every value 0.000..100.000 as pandas would write it (repr: `57.123`, `57.1`, `0.0`)."""
    return np.array([repr(i / 1000).encode() for i in range(100001)] + [b""], dtype=object)


def write_util(args):
    rng = np.random.default_rng(args.seed)
    columns = gpu_columns(args.columns)
    header = ("Time," + ",".join(columns) + "\n").encode()
    quantiles = kalos_gpu_util_quantiles()
    table = cell_table()
    empty_index = len(table) - 1
    target_rows = args.rows
    target_bytes = parse_size(args.bytes) if args.bytes else None
    if target_rows is None and target_bytes is None:
        sys.exit("util: give --rows or --bytes")

    # Each GPU keeps a level for a while (jobs last minutes to hours) and jitters around it, so
    # rows are not independent noise; it does not matter for parsing speed, only for realism.
    level = quantiles[rng.integers(0, len(quantiles), size=args.columns)]
    tmp = args.out + ".tmp"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    written = 0
    rows = 0
    block = 256
    with open(tmp, "wb", buffering=8 << 20) as out:
        out.write(header)
        written += len(header)
        t = UTIL_START
        while True:
            n = block
            if target_rows is not None:
                n = min(n, target_rows - rows)
            if n <= 0:
                break
            # Per row: 2% of GPUs change level (a job starts or ends), the rest jitter by < 1.
            change = rng.random((n, args.columns)) < 0.02
            new_levels = quantiles[rng.integers(0, len(quantiles), size=(n, args.columns))]
            jitter = rng.random((n, args.columns))
            empty = rng.random((n, args.columns)) < EMPTY_FRACTION
            lines = []
            for r in range(n):
                level = np.where(change[r], new_levels[r], level)
                v = level - jitter[r] * (level > 0) * (level < 100)
                idx = np.rint(np.clip(v, 0, 100) * 1000).astype(np.int64)
                idx[empty[r]] = empty_index
                lines.append(b"%d," % t + b",".join(table[idx].tolist()) + b"\n")
                t += SAMPLE_SECONDS
            chunk = b"".join(lines)
            out.write(chunk)
            written += len(chunk)
            rows += n
            if target_bytes is not None and written >= target_bytes:
                break
    os.replace(tmp, args.out)
    print("%s: %d rows x %d columns, %.1f MB" % (args.out, rows, args.columns + 1, written / 1e6), file=sys.stderr)


# --- job trace ---------------------------------------------------------------------------------

TYPES = ["Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other"]
TYPE_P = [0.649, 0.009, 0.149, 0.029, 0.019, 0.145]  # Seren GPU-job counts (README)
STATES = ["COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL"]
STATE_P = [0.497, 0.075, 0.424, 0.003, 0.001]
GPUS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
GPUS_P = [0.58, 0.07, 0.08, 0.17, 0.04, 0.03, 0.015, 0.008, 0.004, 0.002, 0.001]


def write_jobs(args):
    rng = np.random.default_rng(args.seed)
    n = args.rows
    start = 1677600000  # 2023-03-01 00:00:00+08:00
    offset = 8 * 3600
    span = 184 * 86400  # March-August, as the release
    submit = start + np.sort(rng.integers(0, span, size=n))
    gpu_job = rng.random(n) < 0.64  # 663,813 of 1,031,550 Seren jobs use GPUs
    gpus = np.where(gpu_job, rng.choice(GPUS, size=n, p=GPUS_P), 0)
    nodes = np.maximum(1, (gpus + 7) // 8)
    cpus = np.where(gpu_job, gpus * 16, rng.choice([1, 2, 4, 8, 16, 32], size=n))
    types = rng.choice(len(TYPES), size=n, p=TYPE_P)
    states = rng.choice(len(STATES), size=n, p=STATE_P)
    # Queue: half start at once (median ~1 s), the rest wait up to 10 minutes.
    queue = np.where(rng.random(n) < 0.5, rng.integers(0, 3, size=n),
                     np.minimum(600, rng.exponential(150, size=n).astype(np.int64)))
    # Run time: log-normal around 2 minutes, 10 s to 1 day.
    duration = np.clip(np.exp(rng.normal(np.log(122), 1.6, size=n)), 10, 86400).astype(np.int64)
    never_started = (rng.random(n) < 0.03)
    states[never_started] = STATES.index("CANCELLED")
    users = rng.integers(0, 0x10000, size=n)

    days = {}

    def iso(ts):
        local = ts + offset
        d, rem = divmod(local, 86400)
        date = days.get(d)
        if date is None:
            date = np.datetime_as_string(np.datetime64(d, "D"))
            days[d] = date
        return "%s %02d:%02d:%02d+08:00" % (date, rem // 3600, rem // 60 % 60, rem % 60)

    tmp = args.out + ".tmp"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(tmp, "w", buffering=8 << 20) as out:
        out.write("job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n")
        lines = []
        for i in range(n):
            s = int(submit[i])
            g = int(gpus[i])
            if never_started[i]:
                # Cancelled while pending: no start; the end is the cancel time.
                end = s + int(queue[i])
                lines.append("%d,u%x,%d,%d,%d,%s,%s,%s,,%s,0,,0.0\n" % (
                    5778432 + i, users[i], nodes[i], g, cpus[i], TYPES[types[i]], STATES[states[i]],
                    iso(s), iso(end)))
            else:
                q = int(queue[i])
                d = int(duration[i])
                lines.append("%d,u%x,%d,%d,%d,%s,%s,%s,%s,%s,%d,%d,%.1f\n" % (
                    5778432 + i, users[i], nodes[i], g, cpus[i], TYPES[types[i]], STATES[states[i]],
                    iso(s), iso(s + q), iso(s + q + d), d, q, float(d * g)))
            if len(lines) == 65536:
                out.write("".join(lines))
                lines.clear()
        out.write("".join(lines))
    os.replace(tmp, args.out)
    print("%s: %d job rows, %.1f MB" % (args.out, n, os.path.getsize(args.out) / 1e6), file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("util", help="wide utilization CSV")
    u.add_argument("--out", required=True)
    u.add_argument("--rows", type=int)
    u.add_argument("--bytes", help="stop after about this size, e.g. 2G, 150M")
    u.add_argument("--columns", type=int, default=2345, help="GPU columns (default 2345, as Kalos)")
    u.add_argument("--seed", type=int, default=1)
    j = sub.add_parser("jobs", help="Seren-format job trace")
    j.add_argument("--out", required=True)
    j.add_argument("--rows", type=int, default=1_500_000)
    j.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if args.cmd == "util":
        write_util(args)
    else:
        write_jobs(args)


if __name__ == "__main__":
    main()
