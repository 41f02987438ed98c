"""leakscope from Python: name the task a thread is working on, take a snapshot now, read live
counters. Every call is a no-op (and costs next to nothing) when the process runs without
leakscope's preload.

    import leakscope

    with leakscope.task("request", request_id):
        handle(request)

(PYTEST_DONT_REWRITE: imported before pytest by the preload's sitecustomize, it has no asserts
for pytest to rewrite.)
"""
import ctypes
import threading

__all__ = ["active", "leak_check", "live_bytes", "snapshot_now", "stream_path", "task", "name_thread"]

DOMAINS = {
    "heap": 0,
    "mmap": 1,
    "brk": 2,
    "c10_cpu": 3,
    "cuda": 4,
    "cuda_host": 5,
    "cuda_managed": 6,
    "c10_cuda": 7,
}


def _preload():
    """The preload's C API, found among the symbols the process has loaded; None without it."""
    try:
        process = ctypes.CDLL(None)
        functions = {
            "task_begin": process.leakscope_task_begin,
            "task_end": process.leakscope_task_end,
            "snapshot_now": process.leakscope_snapshot_now,
            "live_bytes": process.leakscope_live_bytes,
            "is_active": process.leakscope_is_active,
            "thread_name": process.leakscope_thread_name,
        }
    except (OSError, AttributeError):
        return None
    functions["task_begin"].argtypes = [ctypes.c_char_p, ctypes.c_uint64]
    functions["live_bytes"].argtypes = [ctypes.c_int]
    functions["live_bytes"].restype = ctypes.c_int64
    functions["thread_name"].argtypes = [ctypes.c_char_p]
    stream_path = getattr(process, "leakscope_stream_path", None)  # absent from older preloads
    if stream_path is not None:
        stream_path.restype = ctypes.c_char_p
        functions["stream_path"] = stream_path
    leak_check = getattr(process, "leakscope_leak_check", None)  # absent from older preloads
    if leak_check is not None:
        leak_check.restype = ctypes.c_int64
        functions["leak_check"] = leak_check
    if functions["is_active"]() != 1:
        return None
    return functions


_api = _preload()


def active():
    """True when this process is being traced by leakscope."""
    return _api is not None


# Each thread's tasks begun and not yet ended, innermost last: to tell when they end out of order.
_open_tasks = threading.local()
_out_of_order_said = False


def _say_tasks_out_of_order():
    global _out_of_order_said
    if _out_of_order_said:
        return
    _out_of_order_said = True
    import sys

    sys.stderr.write(
        "leakscope: warning: tasks of one thread ended out of order (coroutines of one event loop, each "
        "in a leakscope.task across an await?): a task is its thread's, so allocations went to the task "
        "begun last; put leakscope.task around code without an await (docs/PYTHON.md)\n"
    )


class task:
    """Tags every allocation the calling thread makes inside the block with task `name` (and an
    id of the caller's choosing). Tasks nest; the innermost one wins. A task is the thread's: under
    asyncio, a block with an await inside lends it to every coroutine the loop runs meanwhile
    (ending them out of order is said once on stderr). A plain class rather than a generator:
    entering one makes no reference cycle that would keep memory until a collection."""

    __slots__ = ("_name", "_id", "_begun")

    def __init__(self, name, id=0):
        self._name = str(name).encode()
        self._id = int(id) & (2**64 - 1)
        self._begun = False

    def __enter__(self):
        self._begun = _api is not None and _api["task_begin"](self._name, self._id) == 0
        if self._begun:
            opened = getattr(_open_tasks, "tasks", None)
            if opened is None:
                opened = _open_tasks.tasks = []
            opened.append(self)
        return self

    def __exit__(self, *exception):
        if self._begun:
            self._begun = False
            opened = getattr(_open_tasks, "tasks", [])  # [] when it ends on another thread than it began
            if opened and opened[-1] is self:
                opened.pop()
            else:
                if self in opened:
                    opened.remove(self)
                _say_tasks_out_of_order()
            _api["task_end"]()
        return False


def snapshot_now():
    """Writes a snapshot now; True once it is on disk."""
    return _api is not None and _api["snapshot_now"]() == 0


def leak_check():
    """Pauses the process's other threads, scans its memory for blocks no pointer reaches (as
    leak_check=1 does at exit), writes a snapshot carrying what each site lost, and returns the
    bytes found lost, directly and indirectly; None when not traced, in sampled mode, or when the
    check could not run."""
    if _api is None or "leak_check" not in _api:
        return None
    lost = _api["leak_check"]()
    return None if lost < 0 else lost


def stream_path():
    """The path of the stream this process writes (as opened), or None when not traced."""
    if _api is None or "stream_path" not in _api:
        return None
    path = _api["stream_path"]()
    return path.decode() if path else None


def live_bytes(domain="heap"):
    """Bytes of `domain` ("heap", "mmap", "c10_cpu", ...) allocated and not yet freed, as tracked
    now; 0 when not traced."""
    if domain not in DOMAINS:
        raise ValueError("unknown domain %r; one of %s" % (domain, ", ".join(DOMAINS)))
    return 0 if _api is None else _api["live_bytes"](DOMAINS[domain])


def name_thread(name=None):
    """Names the calling thread in leakscope's reports (the kernel's name is left alone); by
    default, with its threading.Thread name."""
    if _api is None:
        return False
    if name is None:
        name = threading.current_thread().name
    return _api["thread_name"](str(name).encode()) == 0


def _name_python_threads():
    """Every threading.Thread started from now on tells leakscope its name, and so does a thread
    renamed while it runs; the main thread is named now (MainThread)."""
    if _api is None or getattr(threading.Thread, "_leakscope_named", False):
        return
    bootstrap = threading.Thread._bootstrap_inner
    name_property = threading.Thread.name

    def _bootstrap_inner(self):
        name_thread(self.name)
        bootstrap(self)

    def _set_name(self, value):
        name_property.fset(self, value)
        if self is threading.current_thread():
            name_thread(self.name)

    threading.Thread._bootstrap_inner = _bootstrap_inner
    threading.Thread.name = property(name_property.fget, _set_name, doc=name_property.__doc__)
    threading.Thread._leakscope_named = True
    # The interpreter's own thread was started before any of this: named as threading names it.
    if threading.current_thread() is threading.main_thread():
        name_thread()


# `pytest -p leakscope` loads this package as a pytest plugin. Its hooks live in pytest_plugin.py
# and are looked up here only when asked for (pytest lists a plugin's names with dir()): a plain
# `import leakscope`, which the preload's sitecustomize makes before pytest is imported, never
# imports pytest.
_PYTEST_HOOKS = ("pytest_addoption", "pytest_configure", "pytest_pyfunc_call")


def __getattr__(name):
    if name in _PYTEST_HOOKS:
        try:
            from . import pytest_plugin
        except ImportError as error:
            raise AttributeError(name) from error
        return getattr(pytest_plugin, name)
    raise AttributeError("module 'leakscope' has no attribute %r" % name)


def __dir__():
    return sorted(list(globals()) + list(_PYTEST_HOOKS))
