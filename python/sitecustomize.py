"""Put on PYTHONPATH by leakscope's preload in a traced CPython: tells leakscope the name of every
threading.Thread, then runs the sitecustomize this one stands in front of, if there is one. It
imports neither the leakscope package nor asyncio: a program that imports neither pays for
neither (`import leakscope` makes the package follow asyncio's tasks, docs/PYTHON.md)."""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _run_the_next_sitecustomize():
    import importlib.machinery

    path = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    # Only now: it imports contextlib and more, which a program without another sitecustomize
    # may never need.
    import importlib.util

    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _name_python_threads():
    """Every threading.Thread started from now on tells leakscope its name, and so does a thread
    renamed while it runs; the main thread is named now (MainThread)."""
    import ctypes
    import threading

    try:
        process = ctypes.CDLL(None)
        if process.leakscope_is_active() != 1:
            return
        give_name = process.leakscope_thread_name
    except (OSError, AttributeError):
        return
    give_name.argtypes = [ctypes.c_char_p]
    if getattr(threading.Thread, "_leakscope_named", False):
        return
    bootstrap = threading.Thread._bootstrap_inner
    name_property = threading.Thread.name

    def _bootstrap_inner(self):
        give_name(str(self.name).encode())
        bootstrap(self)

    def _set_name(self, value):
        name_property.fset(self, value)
        if self is threading.current_thread():
            give_name(str(self.name).encode())

    threading.Thread._bootstrap_inner = _bootstrap_inner
    threading.Thread.name = property(name_property.fget, _set_name, doc=name_property.__doc__)
    threading.Thread._leakscope_named = True
    # The interpreter's own thread was started before any of this: named as threading names it.
    if threading.current_thread() is threading.main_thread():
        give_name(str(threading.current_thread().name).encode())


def _leave_fork_warnings_as_untraced():
    """CPython 3.12+ warns at os.fork() that a process with more than one thread may deadlock in
    the child, counting the process's threads, leakscope's writer among them. A fork whose count
    only that thread makes ignores the warning (under -W error it would raise where the program
    untraced does not); one in a program with threads of its own warns as it does untraced."""
    if sys.version_info < (3, 12):
        return
    import ctypes

    try:
        own_threads = ctypes.CDLL(None).leakscope_python_own_threads
    except (OSError, AttributeError):
        return
    import re
    import warnings

    # What warnings.filterwarnings("ignore", message=..., category=DeprecationWarning) inserts.
    ignored = ("ignore", re.compile(r"This process \(pid=\d+\) is multi-threaded, use of \w+\(\) may lead to "
                                    r"deadlocks in the child\.", re.I), DeprecationWarning, None, 0)

    def threads_of_the_process():
        try:
            with open("/proc/self/stat", "rb") as stat:
                return int(stat.read().rsplit(b")", 1)[1].split()[17])  # num_threads, the 20th field
        except (OSError, ValueError, IndexError):
            return 0

    def before_fork():
        quiet = threads_of_the_process() - own_threads() == 1
        if quiet and ignored not in warnings.filters:
            warnings.filterwarnings("ignore", message=ignored[1].pattern, category=DeprecationWarning)
        elif not quiet and ignored in warnings.filters:
            warnings.filters.remove(ignored)
            warnings._filters_mutated()

    os.register_at_fork(before=before_fork)


def _collect_garbage_before_teardown():
    """Registered before the program's own atexit handlers, so run after them: a snapshot, then the
    collection the interpreter makes as it finalizes, made before the teardown mark instead of after
    it. Reference cycles the collector had not reached yet (its oldest generation waits for a quarter
    of the long-lived objects to be new, and torch makes a hundred thousand) are garbage, not a leak;
    the snapshot before tells their fall from a shutdown's (docs/ANALYSIS.md)."""
    import atexit
    import ctypes
    import gc

    try:
        before_collection = ctypes.CDLL(None).leakscope_python_before_final_collection
    except (OSError, AttributeError):
        return

    def collect():
        if gc.isenabled() and before_collection() == 0:
            gc.collect()

    atexit.register(collect)


try:
    _name_python_threads()
    _leave_fork_warnings_as_untraced()
    _collect_garbage_before_teardown()
finally:
    _run_the_next_sitecustomize()
