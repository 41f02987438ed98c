#!/usr/bin/env python3
"""What following asyncio tasks costs a step (docs/PYTHON.md, tasks under asyncio): an event loop
running 200 tasks of 2 000 steps each (`await asyncio.sleep(0)`, a small allocation per step),
untraced, traced without `import leakscope`, and traced with it and each task in a
leakscope.task. Prints the medians of --rounds runs in turn and the cost per step; timings are
shown, never judged.

    bench/asyncio_task_steps.py [--build build] [--rounds 5]

Figures go into docs/PERFORMANCE.md.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

TASKS, STEPS = 200, 2000

PROGRAM = """
import asyncio, sys
follow = sys.argv[1] == "tasks"
if follow:
    import leakscope

async def work(n):
    kept = None
    for step in range(%d):
        kept = [step]
        await asyncio.sleep(0)
    return kept

async def task_of(n):
    if follow:
        with leakscope.task("work", n):
            return await work(n)
    return await work(n)

async def main():
    await asyncio.gather(*(task_of(n) for n in range(%d)))

asyncio.run(main())
""" % (STEPS, TASKS)


def timed(argv):
    start = time.monotonic()
    subprocess.run(argv, check=True, capture_output=True)
    return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--python", default="/usr/bin/python3")
    arguments = parser.parse_args()
    leakscope = os.path.join(arguments.build, "bin", "leakscope")
    scratch = tempfile.mkdtemp(prefix="asyncio-steps-")
    script = os.path.join(scratch, "steps.py")
    with open(script, "w") as file:
        file.write(PROGRAM)
    stream = os.path.join(scratch, "run.lsc")
    traced = [leakscope, "run", "-o", stream, "--", arguments.python, script]
    runs = {"untraced": [], "traced, no import": [], "traced, tasks followed": []}
    for _ in range(arguments.rounds):
        runs["untraced"].append(timed([arguments.python, script, "plain"]))
        runs["traced, no import"].append(timed(traced + ["plain"]))
        runs["traced, tasks followed"].append(timed(traced + ["tasks"]))
    steps = TASKS * STEPS
    medians = {name: statistics.median(times) for name, times in runs.items()}
    for name, median in medians.items():
        print(f"{name:>24}: {median:6.2f} s (min {min(runs[name]):.2f})")
    extra = medians["traced, tasks followed"] - medians["traced, no import"]
    print(f"following tasks: {extra / steps * 1e6:+.2f} us a step over {steps} steps")


if __name__ == "__main__":
    sys.exit(main())
