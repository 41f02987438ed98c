#!/usr/bin/env python3
"""Side-by-side overhead of leakscope against the uninstrumented run, heaptrack, valgrind massif and
jemalloc's profiler.

Runs every workload under every tool in alternation (A B C A B C ...), so that machine noise
hits all tools alike, and prints a markdown table of median wall time, CPU time and peak RSS,
with ratios to the uninstrumented run, the size of what each tool wrote and the time its own
reader takes on it (leakscope report, heaptrack_print, ms_print). Then runs hook_cost_bench plain and under the preload and
prints the cost of each hooked call.

    bench/compare_tools.py [--build build] [--rounds 5] [--quick] [--only NAME | --python]

Figures and the command line go into docs/PERFORMANCE.md.
"""
import argparse
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


class ToolFailed(Exception):
    pass


def run_once(argv, env):
    start = time.monotonic()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    errors = process.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        last = [line for line in errors.splitlines() if line.strip()][-3:]
        raise ToolFailed(f"exit status {os.waitstatus_to_exitcode(status)}: {' / '.join(last)}"[:160])
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


class Tool:
    """How to run a command under one tool, where its output goes, and how to read that output."""

    def __init__(self, name, wrap, env=None, outputs=None, reader=None):
        self.name = name
        self.wrap = wrap                # argv -> argv
        self.env = env or {}            # extra environment
        self.outputs = outputs or (lambda: [])  # paths written by the last run
        self.reader = reader            # outputs -> argv that turns them into a report, or None


def tools(build, scratch):
    leakscope = os.path.join(build, "bin", "leakscope")
    stream = os.path.join(scratch, "run.lsc")
    in_scratch = lambda prefix: lambda: glob.glob(os.path.join(scratch, prefix + "*"))
    leakscope_run = lambda options: lambda argv: [leakscope, "run", *options, "-o", stream, "--"] + argv
    report = lambda outputs: [leakscope, "report", stream]
    found = [Tool("uninstrumented", lambda argv: argv),
             Tool("leakscope exact", leakscope_run([]), outputs=in_scratch("run.lsc"), reader=report),
             Tool("leakscope exact, unwind=fp", leakscope_run(["--option", "unwind=fp"]), outputs=in_scratch("run.lsc"),
                  reader=report),
             Tool("leakscope sampled 512KiB", leakscope_run(["--option", "sample=512KiB"]),
                  outputs=in_scratch("run.lsc"), reader=report)]
    if shutil.which("heaptrack"):
        found.append(Tool("heaptrack", lambda argv: ["heaptrack", "-o", os.path.join(scratch, "heaptrack")] + argv,
                          outputs=in_scratch("heaptrack"), reader=lambda outputs: ["heaptrack_print", outputs[0]]))
    if shutil.which("valgrind"):
        massif_out = os.path.join(scratch, "massif.out")
        found.append(Tool("valgrind massif", lambda argv: ["valgrind", "-q", "--tool=massif",
                                                           f"--massif-out-file={massif_out}"] + argv,
                          outputs=in_scratch("massif.out"), reader=lambda outputs: ["ms_print", outputs[0]]))
    jemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
    if os.path.exists(jemalloc):
        # Every allocation sampled (lg_prof_sample:0), a profile written at exit: exact profiling.
        found.append(Tool("jemalloc prof (exact)", lambda argv: argv,
                          env={"LD_PRELOAD": jemalloc, "MALLOC_CONF": "prof:true,lg_prof_sample:0,prof_final:true,"
                               f"prof_prefix:{os.path.join(scratch, 'jeprof')}"},
                          outputs=in_scratch("jeprof")))
    return found


FP_TOOLS = {"uninstrumented", "leakscope exact", "leakscope exact, unwind=fp", "leakscope sampled 512KiB"}


def workloads(build, quick, scratch):
    """(name, argv, tools that run it): unwind=fp only where the code has frame pointers; the
    frame-pointer builds only under leakscope (the other tools were measured on the same source)."""
    heavy = os.path.join(build, "bin", "malloc_heavy")
    heavy_fp = os.path.join(build, "bin", "malloc_heavy_fp")  # the same, built with frame pointers
    ops = "1000000" if quick else "4000000"
    no_fp = lambda tool: tool != "leakscope exact, unwind=fp"
    found = [
        ("malloc-heavy, 2 threads, 16 B-64 KiB", [heavy, "--threads", "2", "--ops", ops], lambda tool: True),
        ("small-block churn, 2 threads, 16-256 B", [heavy, "--threads", "2", "--ops", ops, "--small"], lambda tool: True),
        ("malloc-heavy, 8 threads", [heavy, "--threads", "8", "--ops", ops], lambda tool: True),
        ("malloc-heavy, 2 threads, frame-pointer build", [heavy_fp, "--threads", "2", "--ops", ops], FP_TOOLS.__contains__),
        ("small-block churn, frame-pointer build", [heavy_fp, "--threads", "2", "--ops", ops, "--small"],
         FP_TOOLS.__contains__),
    ]
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    python = "/usr/bin/python3"
    found.append(("python3, dict/list-heavy script", [python, os.path.join(source, "bench", "python_dicts.py"),
                                                      "3" if quick else "12"], no_fp))
    # The compiler proper on a preprocessed translation unit (fmt, nlohmann-json, the STL): one
    # process, so that tools which do not follow children see all of it.
    preprocessed = os.path.join(scratch, "report_format.ii")
    subprocess.run(["g++", "-std=c++20", f"-I{source}/src", f"-I{source}/include", "-E",
                    os.path.join(source, "src", "report", "report_format.cc"), "-o", preprocessed], check=True)
    cc1plus = subprocess.run(["g++", "-print-prog-name=cc1plus"], capture_output=True, text=True, check=True).stdout.strip()
    found.append(("g++ -O2 (cc1plus) of a 4 MB translation unit", [cc1plus, "-quiet", "-O2", "-std=c++20", preprocessed,
                                                                   "-o", os.path.join(scratch, "out.s")], no_fp))
    if shutil.which("sqlite3"):
        found.append(("sqlite3, in-memory database of 600 000 rows",
                      ["sqlite3", ":memory:", "-init", os.path.join(source, "bench", "sqlite_fill.sql"), ".quit"], no_fp))
    forward = os.path.join(build, "bin", "torch_forward_loop")
    model = os.path.join(scratch, "model.pt")
    if os.path.exists(forward) and subprocess.run(
            [python, os.path.join(source, "tests", "integration", "fixtures", "make_torchscript_model.py"), model],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
        found.append(("libtorch inference loop (TorchScript forward, batch 32)",
                      [forward, model, "60" if quick else "300"], no_fp))
    return found


def format_size(size):
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 1024:.0f} KiB"


def clear_outputs(tool):
    for path in tool.outputs():
        os.remove(path)


def compare(build, rounds, quick, only=None):
    scratch = tempfile.mkdtemp(prefix="leakscope-bench-")
    lines = ["| workload | tool | wall s (median, min-max) | wall ratio | CPU ratio | peak RSS ratio | output | report s |",
             "|---|---|---|---|---|---|---|---|"]
    all_tools = tools(build, scratch)
    for name, argv, runs_under in workloads(build, quick, scratch):
        if only and only not in name:
            continue
        chosen = [tool for tool in all_tools if runs_under(tool.name)]
        results = {tool.name: [] for tool in chosen}
        output_bytes, report_s, failed = {}, {}, {}
        for round_number in range(rounds):
            for tool in chosen:
                if tool.name in failed:
                    continue
                clear_outputs(tool)
                try:
                    results[tool.name].append(run_once(tool.wrap(argv), dict(os.environ, **tool.env)))
                except ToolFailed as failure:
                    if tool.name == "uninstrumented":
                        sys.exit(f"compare_tools: {' '.join(argv)} failed: {failure}")
                    failed[tool.name] = str(failure)
                    clear_outputs(tool)
                    continue
                outputs = tool.outputs()
                output_bytes[tool.name] = sum(os.path.getsize(path) for path in outputs)
                if round_number == rounds - 1 and tool.reader is not None and outputs:
                    try:
                        report_s[tool.name] = run_once(tool.reader(sorted(outputs)), dict(os.environ))[0]
                    except ToolFailed:
                        pass  # the table shows "-" for a reader that could not read the output
                clear_outputs(tool)
        base_wall = statistics.median(r[0] for r in results["uninstrumented"])
        base_cpu = statistics.median(r[1] for r in results["uninstrumented"])
        base_rss = statistics.median(r[2] for r in results["uninstrumented"])
        for tool, runs in results.items():
            if tool in failed:
                lines.append(f"| {name} | {tool} | failed: {failed[tool]} | | | | | |")
                continue
            walls = [r[0] for r in runs]
            wall = statistics.median(walls)
            cpu = statistics.median(r[1] for r in runs)
            rss = statistics.median(r[2] for r in runs)
            output = format_size(output_bytes[tool]) if output_bytes.get(tool) else "-"
            reading = f"{report_s[tool]:.1f}" if tool in report_s else "-"
            lines.append(f"| {name} | {tool} | {wall:.3f} ({min(walls):.3f}-{max(walls):.3f}) | "
                         f"{wall / base_wall:.2f}x | {cpu / base_cpu:.2f}x | {rss / base_rss:.2f}x | {output} | {reading} |")
        print(lines[-len(results)], "...", file=sys.stderr, flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    return lines


def own_memory(leakscope, stream):
    """leakscope's own memory at the stream's last snapshot (overhead_bytes), from its report."""
    reported = subprocess.run([leakscope, "report", "--format", "json", "--top", "1", stream],
                              capture_output=True, text=True, check=True)
    return json.loads(reported.stdout)["overhead_bytes"]


def depth_costs(build, rounds, quick):
    """Exact mode at several stack depths: time against the uninstrumented run, and leakscope's own
    memory at the end (from the stream), for choosing the default depth."""
    scratch = tempfile.mkdtemp(prefix="leakscope-depth-")
    leakscope = os.path.join(build, "bin", "leakscope")
    stream = os.path.join(scratch, "run.lsc")
    chosen = [w for w in workloads(build, quick, scratch)
              if w[0].startswith(("malloc-heavy, 2 threads, 16", "python3", "libtorch"))]
    depths = (8, 16, 32, 64, 128)
    lines = ["| workload | depth | wall ratio (median) | leakscope's own memory at exit |", "|---|---|---|---|"]
    for name, argv, _ in chosen:
        plain, traced, overhead = [], {d: [] for d in depths}, {}
        for _ in range(rounds):
            plain.append(run_once(argv, dict(os.environ))[0])
            for depth in depths:
                for path in glob.glob(stream + "*"):
                    os.remove(path)
                traced[depth].append(run_once([leakscope, "run", "--depth", str(depth), "-o", stream, "--"] + argv,
                                              dict(os.environ))[0])
                overhead[depth] = own_memory(leakscope, stream)
        base = statistics.median(plain)
        for depth in depths:
            lines.append(f"| {name} | {depth} | {statistics.median(traced[depth]) / base:.2f}x | "
                         f"{overhead[depth] / 2**20:.1f} MiB |")
    shutil.rmtree(scratch, ignore_errors=True)
    return lines


def python_costs(build, rounds, quick):
    """What Python frames and recording small objects cost: the dict/list script and a PyTorch
    forward loop, uninstrumented and under leakscope with each part on and off (small objects
    recorded through pymalloc, the default; through glibc's malloc with PYTHONMALLOC=malloc; or
    not recorded), runs alternating."""
    leakscope = os.path.join(build, "bin", "leakscope")
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    scratch = tempfile.mkdtemp(prefix="leakscope-python-")
    stream = os.path.join(scratch, "run.lsc")
    python = "/usr/bin/python3"
    chosen = [("python3, dict/list-heavy script", [python, os.path.join(source, "bench", "python_dicts.py"),
                                                   "3" if quick else "12"])]
    if subprocess.run([python, "-c", "import torch"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
        chosen.append(("python3 + torch, forward loop (MLP, batch 32)",
                       [python, os.path.join(source, "bench", "torch_forward_loop.py"), "60" if quick else "300"]))
    malloc = {"PYTHONMALLOC": "malloc"}
    configurations = [("exact, frames off, small objects unrecorded", ["--option", "python_frames=0,python_malloc=0"], {}),
                      ("exact, frames on, small objects unrecorded", ["--option", "python_malloc=0"], {}),
                      ("exact, frames off, PYTHONMALLOC=malloc", ["--option", "python_frames=0"], malloc),
                      ("exact, frames on, PYTHONMALLOC=malloc", [], malloc),
                      ("exact, frames off, pymalloc recorded", ["--option", "python_frames=0"], {}),
                      ("exact, frames on, pymalloc recorded (default)", [], {}),
                      ("sampled 512KiB, frames off", ["--sample", "512KiB", "--option", "python_frames=0"], {}),
                      ("sampled 512KiB, frames on (default)", ["--sample", "512KiB"], {})]
    lines = ["| workload | leakscope | wall s (median) | wall ratio | peak RSS (median) | stream |",
             "|---|---|---|---|---|---|"]
    for name, argv in chosen:
        plain, traced, sizes = [], {label: [] for label, _, _ in configurations}, {}
        for _ in range(rounds):
            plain.append(run_once(argv, dict(os.environ)))
            for label, options, variables in configurations:
                for path in glob.glob(stream + "*"):
                    os.remove(path)
                environment = dict(os.environ, **variables)
                traced[label].append(run_once([leakscope, "run", *options, "-o", stream, "--"] + argv, environment))
                sizes[label] = sum(os.path.getsize(path) for path in glob.glob(stream + "*"))
        base = statistics.median(run[0] for run in plain)
        base_rss = statistics.median(run[2] for run in plain)
        lines.append(f"| {name} | uninstrumented | {base:.3f} | 1.00x | {format_size(base_rss)} | - |")
        for label, _, _ in configurations:
            wall = statistics.median(run[0] for run in traced[label])
            rss = statistics.median(run[2] for run in traced[label])
            lines.append(f"| {name} | {label} | {wall:.3f} | {wall / base:.2f}x | {format_size(rss)} | {format_size(sizes[label])} |")
    shutil.rmtree(scratch, ignore_errors=True)
    return lines


def memory_per_block(build):
    """leakscope's own memory per live heap block, from the stream's overhead figure at exit, for
    a process holding 1 M and 4 M blocks (the difference removes the fixed part)."""
    leakscope = os.path.join(build, "bin", "leakscope")
    scratch = tempfile.mkdtemp(prefix="leakscope-memory-")
    stream = os.path.join(scratch, "run.lsc")
    overhead = {}
    for count in (1 << 20, 1 << 22):
        run_once([leakscope, "run", "-o", stream, "--", os.path.join(build, "bin", "live_blocks"), str(count)],
                 dict(os.environ))
        overhead[count] = own_memory(leakscope, stream)
    shutil.rmtree(scratch, ignore_errors=True)
    lines = ["| live heap blocks | leakscope's own memory | per block |", "|---|---|---|"]
    for count, size in overhead.items():
        lines.append(f"| {count} | {size / 2**20:.1f} MiB | {size / count:.1f} B |")
    (small, small_size), (large, large_size) = overhead.items()
    lines.append(f"| 4 M - 1 M (marginal) | {(large_size - small_size) / 2**20:.1f} MiB | "
                 f"{(large_size - small_size) / (large - small):.1f} B |")
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
    parser.add_argument("--output", help="also write the tables to this markdown file")
    parser.add_argument("--only", help="run only the side-by-side table, for workloads whose name contains this")
    parser.add_argument("--python", action="store_true", help="run only the table of what Python frames cost")
    options = parser.parse_args()
    out = open(options.output, "w") if options.output else None
    sections = (lambda: [f"Measured {time.strftime('%Y-%m-%d')} on {platform.node()} ({os.cpu_count()} cores, "
                         f"{platform.platform()}), {options.rounds} rounds, tools alternating."],
                lambda: compare(options.build, options.rounds, options.quick, options.only),
                lambda: depth_costs(options.build, options.rounds, options.quick),
                lambda: python_costs(options.build, options.rounds, options.quick),
                lambda: memory_per_block(options.build),
                lambda: hook_costs(options.build),
                lambda: report_on_long_streams(options.build, 3 if not options.quick else 1))
    if options.only:
        sections = sections[:2]
    if options.python:
        sections = (sections[0], lambda: python_costs(options.build, options.rounds, options.quick))
    for number, section in enumerate(sections):
        text = ("\n" if number else "") + "\n".join(section()) + "\n"  # each table as soon as it is measured
        print(text, end="", flush=True)
        if out:
            out.write(text)
            out.flush()


if __name__ == "__main__":
    main()
