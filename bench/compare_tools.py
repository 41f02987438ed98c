#!/usr/bin/env python3
"""Side-by-side overhead of leakscope against the uninstrumented run and heaptrack.

Runs every workload under every tool in alternation (A B C A B C ...), so that machine noise
hits all tools alike, and prints a markdown table of median wall time, CPU time and peak RSS,
with ratios to the uninstrumented run. Then runs hook_cost_bench plain and under the preload and
prints the cost of each hooked call.

    bench/compare_tools.py [--build build] [--rounds 5] [--quick]

Figures and the command line go into docs/PERFORMANCE.md.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run_once(argv, env):
    start = time.monotonic()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"compare_tools: {' '.join(argv)} failed with status {status}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def tools(build, scratch):
    leakscope = os.path.join(build, "bin", "leakscope")
    found = [("uninstrumented", lambda argv: argv),
             ("leakscope exact", lambda argv: [leakscope, "run", "-o", os.path.join(scratch, "run.lsc"), "--"] + argv),
             ("leakscope exact, unwind=fp", lambda argv: [leakscope, "run", "--option", "unwind=fp", "-o",
                                                          os.path.join(scratch, "run.lsc"), "--"] + argv),
             ("leakscope sampled 512KiB", lambda argv: [leakscope, "run", "--option", "sample=512KiB", "-o",
                                                        os.path.join(scratch, "run.lsc"), "--"] + argv)]
    if shutil.which("heaptrack"):
        found.append(("heaptrack", lambda argv: ["heaptrack", "-o", os.path.join(scratch, "heaptrack")] + argv))
    return found


def workloads(build, quick):
    heavy = os.path.join(build, "bin", "malloc_heavy")
    heavy_fp = os.path.join(build, "bin", "malloc_heavy_fp")  # the same, built with frame pointers
    ops = "1000000" if quick else "4000000"
    return [
        ("malloc-heavy, 2 threads, 16 B-64 KiB", [heavy, "--threads", "2", "--ops", ops]),
        ("small-block churn, 2 threads, 16-256 B", [heavy, "--threads", "2", "--ops", ops, "--small"]),
        ("malloc-heavy, 8 threads", [heavy, "--threads", "8", "--ops", ops]),
        ("malloc-heavy, 2 threads, frame-pointer build", [heavy_fp, "--threads", "2", "--ops", ops]),
        ("small-block churn, frame-pointer build", [heavy_fp, "--threads", "2", "--ops", ops, "--small"]),
    ]


def compare(build, rounds, quick):
    scratch = tempfile.mkdtemp(prefix="leakscope-bench-")
    env = dict(os.environ)
    lines = ["| workload | tool | wall s (median, min-max) | wall ratio | CPU ratio | peak RSS ratio |",
             "|---|---|---|---|---|---|"]
    for name, argv in workloads(build, quick):
        results = {tool: [] for tool, _ in tools(build, scratch)}
        for _ in range(rounds):
            for tool, wrap in tools(build, scratch):
                results[tool].append(run_once(wrap(argv), env))
        base_wall = statistics.median(r[0] for r in results["uninstrumented"])
        base_cpu = statistics.median(r[1] for r in results["uninstrumented"])
        base_rss = statistics.median(r[2] for r in results["uninstrumented"])
        for tool, runs in results.items():
            walls = [r[0] for r in runs]
            wall = statistics.median(walls)
            cpu = statistics.median(r[1] for r in runs)
            rss = statistics.median(r[2] for r in runs)
            lines.append(f"| {name} | {tool} | {wall:.3f} ({min(walls):.3f}-{max(walls):.3f}) | "
                         f"{wall / base_wall:.2f}x | {cpu / base_cpu:.2f}x | {rss / base_rss:.2f}x |")
    shutil.rmtree(scratch, ignore_errors=True)
    return lines


def hook_costs(build):
    bench = os.path.join(build, "bin", "hook_cost_bench")
    preload = os.path.join(build, "lib", "libleakscope.so")
    scratch = tempfile.mkdtemp(prefix="leakscope-hooks-")

    def measure(extra_env):
        env = dict(os.environ, **extra_env)
        out = subprocess.run([bench, "--benchmark_format=json", "--benchmark_min_time=0.2"], env=env,
                             capture_output=True, text=True, check=True).stdout
        return {b["name"]: b["cpu_time"] for b in json.loads(out)["benchmarks"]}

    plain = measure({})
    traced = measure({"LD_PRELOAD": preload, "LEAKSCOPE_OPTIONS": f"output={scratch}/hooks.lsc"})
    shutil.rmtree(scratch, ignore_errors=True)
    lines = ["| call (pair) | uninstrumented ns | leakscope ns | added ns |", "|---|---|---|---|"]
    for name, base in plain.items():
        lines.append(f"| {name} | {base:.0f} | {traced[name]:.0f} | {traced[name] - base:.0f} |")
    return lines


def report_on_long_streams(build, rounds):
    """Time and peak memory of `leakscope report` on generated hour-long and 1 GiB streams."""
    generator = os.path.join(build, "bin", "make_long_stream")
    leakscope = os.path.join(build, "bin", "leakscope")
    scratch = tempfile.mkdtemp(prefix="leakscope-long-")
    lines = ["| stream | size | report wall s (median, min-max) | report peak RSS |", "|---|---|---|---|"]
    for name, sites in (("1 hour at 1 s snapshots, 2000 sites", "2000"), ("1 hour at 1 s snapshots, 50000 sites", "50000")):
        path = os.path.join(scratch, "long.lsc")
        subprocess.run([generator, path, "--snapshots", "3600", "--sites", sites], check=True, stdout=subprocess.DEVNULL)
        runs = [run_once([leakscope, "report", path], dict(os.environ)) for _ in range(rounds)]
        walls = [r[0] for r in runs]
        size = os.path.getsize(path)
        lines.append(f"| {name} | {size / 2**20:.0f} MiB | {statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f}) | "
                     f"{max(r[2] for r in runs) / 2**20:.0f} MiB |")
        os.remove(path)
    shutil.rmtree(scratch, ignore_errors=True)
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="smaller inputs, for a smoke run")
    options = parser.parse_args()
    print(f"Measured {time.strftime('%Y-%m-%d')} on {platform.node()} ({os.cpu_count()} cores, "
          f"{platform.platform()}), {options.rounds} rounds, tools alternating.\n")
    print("\n".join(compare(options.build, options.rounds, options.quick)))
    print()
    print("\n".join(hook_costs(options.build)))
    print()
    print("\n".join(report_on_long_streams(options.build, 3 if not options.quick else 1)))


if __name__ == "__main__":
    main()
