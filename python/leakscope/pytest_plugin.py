"""The pytest plugin of `pytest -p leakscope`: under `leakscope run`, a test that leaves memory
live beyond its limit fails, naming the Python line that allocated what it left.

    @pytest.mark.leakscope(max_leaked="1MiB")     # this test's limit
    pytest -p leakscope --leakscope-max-leaked=64KiB   # every other test's (default: unchecked)

What a test leaves is measured around the test function (setup and teardown are fixtures'
business): the live heap, mmap and CPU-tensor bytes after a garbage collection, before and after.
Allocations the test makes carry its node id as their task, so a failure can name the line from
the stream. Without the preload the plugin checks nothing. Needs pytest 7 or later.
"""
import gc
import json
import os
import re
import shutil
import subprocess
import sysconfig

import pytest

import leakscope

_SIZE = re.compile(r"^(\d+)\s*(B|K|KB|KiB|M|MB|MiB|G|GB|GiB)?$")
_SCALE = {None: 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MiB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GiB": 1 << 30}


def _size(text, what):
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return text
    match = _SIZE.match(str(text).strip())
    if not match:
        raise pytest.UsageError("%s: not a size (such as 512, 64KiB, 1MiB): %r" % (what, text))
    return int(match.group(1)) * _SCALE[match.group(2)]


def _host_live_bytes():
    return sum(leakscope.live_bytes(domain) for domain in ("heap", "mmap", "c10_cpu"))


def _show(bytes_):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if bytes_ >= scale:
            return "%.2f %s" % (bytes_ / scale, unit)
    return "%d B" % bytes_


def _cli():
    return os.environ.get("LEAKSCOPE_CLI") or shutil.which("leakscope")


def _library_paths():
    """Where the interpreter's own and installed packages live: frames there are not the test's."""
    paths = set()
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            paths.add(os.path.realpath(path))
    return tuple(paths)


_OWN_PACKAGE = os.path.realpath(os.path.dirname(os.path.abspath(leakscope.__file__))) + os.sep


def _is_own(frame):
    """leakscope's own package, whose task bookkeeping a limit of a few bytes can see."""
    return os.path.realpath(frame.get("file") or "").startswith(_OWN_PACKAGE)


def _is_users(frame, libraries):
    name = frame.get("file") or ""
    if not name or name.startswith("<"):  # frozen modules (<frozen runpy>), code made from strings
        return False
    path = os.path.realpath(name)
    return not path.startswith(libraries) and not _is_own(frame) and "site-packages" not in path and "dist-packages" not in path


def _where_it_was_allocated(nodeid):
    """The Python line (and function) of the largest live site the test's task holds, read from
    this process's own stream after a snapshot: the first frame of the test's own code (not the
    standard library's or a package's), else the innermost Python frame not leakscope's own; None
    when it cannot be read."""
    path, cli = leakscope.stream_path(), _cli()
    if not path or not cli or not leakscope.snapshot_now():
        return None
    untraced = {name: value for name, value in os.environ.items() if name not in ("LD_PRELOAD", "LEAKSCOPE_OPTIONS")}
    try:
        dumped = subprocess.run([cli, "dump", path, "--format", "json", "--task", nodeid, "--top", "20"],
                                capture_output=True, text=True, timeout=120, check=False, env=untraced)
        sites = json.loads(dumped.stdout)["sites"] if dumped.returncode == 0 else []
    except (OSError, ValueError, KeyError, subprocess.SubprocessError):
        return None
    libraries = _library_paths()
    best, best_bytes = None, 0
    for site in sites:
        held = sum(task["live_bytes"] for task in site.get("tasks", []) if task.get("name") == nodeid)
        python = [f for f in site.get("frames", []) if f.get("language") == "python" and not _is_own(f)]
        if held <= best_bytes or not python:
            continue
        best, best_bytes = next((f for f in python if _is_users(f, libraries)), python[0]), held
    if best is None:
        return None
    return "%s (%s:%d)" % (best.get("function"), os.path.basename(best.get("file") or "?"), best.get("line", 0))


def pytest_addoption(parser):
    group = parser.getgroup("leakscope", "fail tests that leave memory live (under leakscope run)")
    group.addoption("--leakscope-max-leaked", action="store", default=None, metavar="SIZE",
                    help="bytes a test may leave live (512, 64KiB, 1MiB); default: only tests marked "
                         "@pytest.mark.leakscope(max_leaked=...) are checked")


def pytest_configure(config):
    config.addinivalue_line("markers", "leakscope(max_leaked): the bytes this test may leave live (leakscope)")
    text = config.getoption("--leakscope-max-leaked")
    config._leakscope_default_limit = None if text is None else _size(text, "--leakscope-max-leaked")


def pytest_sessionfinish(session):
    """After the last test and its fixtures' teardown: a snapshot here has what they let go of
    already gone, so that the whole-run gate does not take it for a shutdown that freed a leak."""
    if leakscope.active():
        leakscope.snapshot_now()


def _limit(item):
    marker = item.get_closest_marker("leakscope")
    if marker is not None:
        value = marker.kwargs.get("max_leaked", marker.args[0] if marker.args else 0)
        try:
            return _size(value, "@pytest.mark.leakscope(max_leaked=...)")
        except pytest.UsageError as error:
            message = str(error)
        # Failed outside the handler: the test's report holds the one message, not the chain.
        pytest.fail(message, pytrace=False)
    return getattr(item.config, "_leakscope_default_limit", None)


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """Around the test function itself, inside pytest's own work for the call (which keeps a few
    hundred bytes per test of its own: PYTEST_CURRENT_TEST, its hook records)."""
    limit = _limit(pyfuncitem)
    if limit is None or not leakscope.active():
        yield
        return
    gc.collect()
    with leakscope.task(pyfuncitem.nodeid):
        before = _host_live_bytes()
        holding = _host_live_bytes() - before  # what the reading itself keeps (its number)
        outcome = yield
        failed = outcome.excinfo is not None
        del outcome  # pluggy's record of the call is the plugin's, not the test's
        gc.collect()
        left = _host_live_bytes() - before - holding
    if left <= limit or failed:
        return
    where = _where_it_was_allocated(pyfuncitem.nodeid)
    message = "leakscope: the test left %s live (%d bytes), over its limit of %s" % (_show(left), left, _show(limit))
    message += ("; the most of it allocated at %s" % where) if where else \
        "; leakscope report on this run's stream shows it under the task %r" % pyfuncitem.nodeid
    pytest.fail(message, pytrace=False)
