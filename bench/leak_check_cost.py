#!/usr/bin/env python3
"""What a leak check costs (leak_check=1): the time the program is paused and the memory the scan
maps, on heaps of a million blocks (1 GiB) with 0, 2 and 16 pointers per block to random other
blocks, and 100 000 blocks of 10 KiB; beside the same program built with LeakSanitizer
(g++ -fsanitize=leak, when the compiler has it), whose lost bytes and blocks must be ours too.
Timings are shown, never judged (a loaded machine makes them vary); the lost figures are checked.

    bench/leak_check_cost.py [--build build]

Exits 1 when leakscope's lost figures differ from LeakSanitizer's. Figures go into
docs/PERFORMANCE.md.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

CASES = [(1_000_000, 1024, 0), (1_000_000, 1024, 2), (1_000_000, 1024, 16), (100_000, 10240, 2)]


def timed(argv, env=None):
    start = time.monotonic()
    result = subprocess.run(argv, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:5])}: exit {result.returncode}: {result.stderr[-400:]}")
    return time.monotonic() - start, result.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    arguments = parser.parse_args()
    leakscope = os.path.join(arguments.build, "bin", "leakscope")
    heap = os.path.join(arguments.build, "bin", "leak_check_heap")
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "leak_check_heap.cc")
    scratch = tempfile.mkdtemp(prefix="leak-check-cost-")
    lsan = os.path.join(scratch, "leak_check_heap_lsan")
    have_lsan = subprocess.run(["g++", "-O2", "-g", "-fsanitize=leak", source, "-o", lsan]).returncode == 0
    failed = False
    print(f"{'heap':>28} | {'untraced':>8} | {'traced':>7} | {'checked':>7} | {'paused':>7} | {'scan memory':>11} | "
          f"{'lost (direct+indirect)':>30} | {'LSan run':>8} | LSan lost")
    for count, size, pointers in CASES:
        case = [str(count), str(size), str(pointers)]
        untraced, _ = timed([heap] + case)
        stream = os.path.join(scratch, "run.lsc")
        for path in (stream,):
            if os.path.exists(path):
                os.remove(path)
        traced, _ = timed([leakscope, "run", "-o", stream, "--", heap] + case)
        os.remove(stream)
        checked, _ = timed([leakscope, "run", "-o", stream, "--", heap] + case,
                           dict(os.environ, LEAKSCOPE_OPTIONS="leak_check=1"))
        document = json.loads(subprocess.run([leakscope, "dump", "--format", "json", stream], capture_output=True,
                                             text=True, check=True).stdout)
        check = document["leak_check"]
        lost_bytes = check["lost_bytes"] + check["indirectly_lost_bytes"]
        lost_blocks = check["lost_blocks"] + check["indirectly_lost_blocks"]
        os.remove(stream)
        lsan_text, lsan_figures = "-", "-"
        if have_lsan:
            lsan_time, lsan_err = timed([lsan] + case, dict(os.environ, LSAN_OPTIONS="exitcode=0"))
            match = re.search(r"SUMMARY: LeakSanitizer: (\d+) byte\(s\) leaked in (\d+) allocation", lsan_err)
            lsan_bytes, lsan_blocks = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
            lsan_text, lsan_figures = f"{lsan_time:.2f} s", f"{lsan_bytes} B / {lsan_blocks}"
            if (lsan_bytes, lsan_blocks) != (lost_bytes, lost_blocks):
                failed = True
                lsan_figures += "  <-- differs"
        heap_text = f"{count} x {size} B, {pointers} ptrs"
        print(f"{heap_text:>28} | {untraced:7.2f}s | {traced:6.2f}s | {checked:6.2f}s | {check['stopped_ms'] / 1000:6.2f}s | "
              f"{check['memory_bytes'] / (1 << 20):7.1f} MiB | {str(lost_bytes) + ' B / ' + str(lost_blocks):>30} | "
              f"{lsan_text:>8} | {lsan_figures}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
