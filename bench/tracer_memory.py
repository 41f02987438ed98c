#!/usr/bin/env python3
"""What leakscope itself costs on the processes with the most distinct stacks, in exact mode with
the defaults: its own memory (peak), the stream it writes, and what `leakscope report` takes on
that stream; and `import torch` untraced, traced, and traced with python_malloc=0. Each figure is
checked against its bound (memory and sizes only: timings are shown, never judged, as a loaded
machine makes them vary).

    bench/tracer_memory.py [--build build] [--rounds 3]

Cases: Debian's python3 importing torch and serving a small model for 6 s
(tests/integration/fixtures/torch_model_service.py), and the libtorch demo service for 10 s.
Exits 1 when a bound does not hold. Figures and the command line go into docs/PERFORMANCE.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20
PYTHON = "/usr/bin/python3"


def max_rss_of(argv):
    """Wall time and peak RSS of one run (its own, not leakscope's writer's)."""
    start = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[:4])}...: exit {os.waitstatus_to_exitcode(status)}: {err.decode(errors='replace')[-300:]}")
    return time.monotonic() - start, usage.ru_maxrss * 1024


def measure(leakscope, command, scratch):
    stream = os.path.join(scratch, "run.lsc")
    if os.path.exists(stream):
        os.remove(stream)
    max_rss_of([leakscope, "run", "-o", stream, "--"] + command)
    state = json.loads(subprocess.run([leakscope, "dump", "--format", "json", "--at", "end", "--top", "1", stream],
                                      check=True, capture_output=True).stdout)
    report_s, report_rss = max_rss_of([leakscope, "report", stream])
    return {
        "own": max(state["peak_overhead_bytes"], state["overhead_bytes"]),
        "stream": os.path.getsize(stream),
        "startup_stacks": state["startup_stacks"]["stacks"],
        "report_s": report_s,
        "report_rss": report_rss,
    }


def import_times(leakscope, scratch, rounds):
    """`import torch` untraced, traced with the defaults, and traced without recording each Python
    object (python_malloc=0), run in turn each round so that a machine's drift spreads evenly over
    the three; the figures are the minimum and the median of each."""
    stream = os.path.join(scratch, "import.lsc")
    variants = {"untraced": [PYTHON, "-c", "import torch"],
                "traced": [leakscope, "run", "-o", stream, "--", PYTHON, "-c", "import torch"],
                "python_malloc=0": [leakscope, "run", "-o", stream, "--option", "python_malloc=0", "--",
                                    PYTHON, "-c", "import torch"]}
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, argv in variants.items():
            times[name].append(max_rss_of(argv)[0])
    base = {"min": min(times["untraced"]), "median": statistics.median(times["untraced"])}
    parts = []
    for name, runs in times.items():
        low, middle = min(runs), statistics.median(runs)
        ratio = "" if name == "untraced" else f" ({low / base['min']:.2f}x / {middle / base['median']:.2f}x)"
        parts.append(f"{name} {low:.2f} / {middle:.2f} s{ratio}")
    return f"`import torch`, min / median of {rounds} rounds: " + "; ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    leakscope = os.path.join(args.build, "bin", "leakscope")
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    service = os.path.join(source, "tests", "integration", "fixtures", "torch_model_service.py")
    demo = os.path.join(args.build, "bin", "leakscope_demo_torch_service")
    cases = [("python3 + torch, serving 6 s", [PYTHON, service, "6"], 64 * MIB, 16_000_000, 256 * MIB)]
    if os.path.exists(demo):
        cases.append(("libtorch demo service, 10 s", [demo, "--seconds", "10"], 64 * MIB, 4_000_000, 256 * MIB))
    failed = False
    print("| process | own memory (peak) | stream | start-up stacks cut | report | report RSS |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="leakscope-bench-") as scratch:
        for name, command, own_bound, stream_bound, report_bound in cases:
            runs = [measure(leakscope, command, scratch) for _ in range(args.rounds)]
            worst = {key: max(run[key] for run in runs) for key in runs[0]}
            median_report = statistics.median(run["report_s"] for run in runs)
            checks = [(worst["own"] <= own_bound, f"own memory {worst['own'] / MIB:.1f} MiB > {own_bound / MIB:.0f} MiB"),
                      (worst["stream"] <= stream_bound, f"stream {worst['stream'] / 1e6:.1f} MB > {stream_bound / 1e6:.0f} MB"),
                      (worst["report_rss"] <= report_bound,
                       f"report RSS {worst['report_rss'] / MIB:.0f} MiB > {report_bound / MIB:.0f} MiB")]
            for ok, why in checks:
                if not ok:
                    failed = True
                    print(f"bound exceeded: {name}: {why}", file=sys.stderr)
            print(f"| {name} | {worst['own'] / MIB:.1f} MiB (≤ {own_bound / MIB:.0f}) | {worst['stream'] / 1e6:.2f} MB "
                  f"(≤ {stream_bound / 1e6:.0f}) | {worst['startup_stacks']} | {median_report:.2f} s | "
                  f"{worst['report_rss'] / MIB:.0f} MiB (≤ {report_bound / MIB:.0f}) |")
        print()
        print(import_times(leakscope, scratch, args.rounds))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
