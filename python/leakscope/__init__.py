"""leakscope from Python: name the task the code is working on, take a snapshot now, read live
counters. Every call is a no-op (and costs next to nothing) when the process runs without
leakscope's preload.

    import leakscope

    with leakscope.task("request", request_id):
        handle(request)

(PYTEST_DONT_REWRITE: it has no asserts for pytest to rewrite.)
"""
import collections.abc
import contextvars
import ctypes
import functools
import importlib.machinery
import sys
import threading
import types

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
    task_id = getattr(process, "leakscope_python_task_id", None)  # absent from older preloads
    step_task_cell = getattr(process, "leakscope_python_step_task_cell", None)
    if task_id is not None and step_task_cell is not None:
        task_id.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
        task_id.restype = ctypes.c_uint32
        step_task_cell.restype = ctypes.c_void_p
        functions["task_id"] = task_id
        functions["step_task_cell"] = step_task_cell
    leak_check = getattr(process, "leakscope_leak_check", None)  # absent from older preloads
    if leak_check is not None:
        leak_check.restype = ctypes.c_int64
        functions["leak_check"] = leak_check
    if functions["is_active"]() != 1:
        return None
    return functions


_api = _preload()
# Whether this preload lets the package follow asyncio's tasks (older ones do not).
_can_follow = _api is not None and "step_task_cell" in _api


def active():
    """True when this process is being traced by leakscope."""
    return _api is not None


# The innermost leakscope.task entered in the running code's context (an _Entry); None: none. An
# asyncio task runs in a context of its own, so each coroutine has its own innermost task, and a
# task made inside a `with leakscope.task` block inherits it.
_context_task = contextvars.ContextVar("leakscope_task", default=None)

# Per thread: `opened`, the tasks begun on the thread's own stack of tasks and not yet ended,
# innermost last (to tell when they end out of order); `cell`, once the thread has run a followed
# asyncio step, the preload's cell for the task of the step running on it: the task's id plus 1
# (1: no task), before any task of the thread's own while set, 0 outside steps.
_thread = threading.local()
_out_of_order_said = False


def _say_tasks_out_of_order():
    global _out_of_order_said
    if _out_of_order_said:
        return
    _out_of_order_said = True
    sys.stderr.write(
        "leakscope: warning: tasks of one thread ended out of order (coroutines of one event loop, each "
        "in a leakscope.task across an await, in asyncio tasks made before `import leakscope` or by a "
        "loop it does not follow?): what was allocated while blocks of several were open went to the "
        "task begun last (docs/PYTHON.md)\n"
    )


def _step_cell():
    """The calling thread's step-task cell (made on its first step)."""
    cell = getattr(_thread, "cell", None)
    if cell is None:
        address = _api["step_task_cell"]()
        cell = _thread.cell = ctypes.c_uint32.from_address(address) if address else types.SimpleNamespace(value=0)
    return cell


def _in_step():
    cell = getattr(_thread, "cell", None)
    return cell is not None and cell.value != 0


def _step_value(entry):
    return 1 if entry is None else entry.task._step_value()


class _Entry:
    """One entry into a leakscope.task block, the context's innermost until its exit: the task, the
    entry it is inside of, and where its task was put (on the thread's own stack of tasks, in the
    running step's cell, or nowhere). Kept apart from the task, so that one task object may be
    entered by several coroutines or threads at once."""

    __slots__ = ("task", "outer", "begun")

    def __init__(self, task, outer):
        self.task = task
        self.outer = outer
        self.begun = None


class task:
    """Tags every allocation made inside the block with task `name` (and an id of the caller's
    choosing). Tasks nest; the innermost one wins. A task belongs to the code's context: to its
    thread, and under asyncio to its coroutine, so a block with an await inside keeps its task to
    itself while other coroutines run (docs/PYTHON.md). A plain class rather than a generator:
    entering one makes no reference cycle that would keep memory until a collection."""

    __slots__ = ("_name", "_id", "_step")

    def __init__(self, name, id=0):
        self._name = str(name).encode()
        self._id = int(id) & (2**64 - 1)
        self._step = None

    def _step_value(self):
        """What a step's cell holds while this task is its innermost: its id plus 1."""
        if self._step is None:
            self._step = _api["task_id"](self._name, self._id) + 1
        return self._step

    def __enter__(self):
        if _api is None:
            return self
        if _can_follow and _loop_running():
            _follow_running_loop()
        entry = _Entry(self, _context_task.get())
        _context_task.set(entry)
        if _in_step():
            entry.begun = "step"
            _thread.cell.value = self._step_value()
        elif _api["task_begin"](self._name, self._id) == 0:
            entry.begun = "thread"
            opened = getattr(_thread, "opened", None)
            if opened is None:
                opened = _thread.opened = []
            opened.append(entry)
        return self

    def __exit__(self, *exception):
        if _api is None:
            return False
        entry = _context_task.get()
        opened = getattr(_thread, "opened", [])  # [] when it ends on another thread than it began
        if entry is not None and entry.task is self:
            _context_task.set(entry.outer)
        else:
            # Ended in another context than the one it began in: its newest entry on this thread.
            entry = next((each for each in reversed(opened) if each.task is self), None)
            if entry is None:
                return False
        if entry.begun == "step":
            # Ended by a coroutine closed outside its steps: its last step took its task away.
            if _in_step():
                _thread.cell.value = _step_value(entry.outer)
        elif entry.begun == "thread":
            if opened and opened[-1] is entry:
                opened.pop()
            else:
                if entry in opened:
                    opened.remove(entry)
                _say_tasks_out_of_order()
            _api["task_end"]()
        entry.begun = None
        return False


def _step_begin():
    """Before a followed coroutine runs a step: its context's innermost task (or no task) becomes
    the thread's, over anything the thread has; returns the cell's value to restore after it."""
    cell = _thread.cell if hasattr(_thread, "cell") else _step_cell()
    outer = cell.value
    innermost = _context_task.get()
    cell.value = 1 if innermost is None else innermost.task._step or innermost.task._step_value()
    return outer


class _FollowedCoroutine(collections.abc.Coroutine):
    """An asyncio task's coroutine, run a step at a time with its own leakscope.task: asyncio runs
    each step in the task's context, and the step shows that context's task to the preload for as
    long as it runs. Anything else asked of it is the coroutine's (cr_frame, __qualname__, ...)."""

    __slots__ = ("_coroutine",)

    def __init__(self, coroutine):
        self._coroutine = coroutine

    def send(self, value):
        outer = _step_begin()
        try:
            return self._coroutine.send(value)
        finally:
            _thread.cell.value = outer

    def throw(self, *exception):
        outer = _step_begin()
        try:
            return self._coroutine.throw(*exception)
        finally:
            _thread.cell.value = outer

    def close(self):
        return self._coroutine.close()

    def __await__(self):
        return self._coroutine.__await__()

    def __getattr__(self, name):
        return getattr(self._coroutine, name)

    def __repr__(self):
        return repr(self._coroutine)


def _followed(coroutine):
    return _FollowedCoroutine(coroutine) if type(coroutine) is types.CoroutineType else coroutine


def _follow_asyncio_tasks(base_events):
    """Every asyncio task that asyncio's own event loops make from now on is followed."""
    loop_class = base_events.BaseEventLoop
    if getattr(loop_class.create_task, "_leakscope_follows", False):
        return
    make_task = loop_class.create_task

    @functools.wraps(make_task)
    def create_task(self, coro, **keywords):
        task = make_task(self, _followed(coro), **keywords)
        # In debug mode a task keeps where it was made: the program's call, not this one.
        made_at = getattr(task, "_source_traceback", None)
        if made_at and made_at[-1].filename == __file__:
            del made_at[-1]
        return task

    create_task._leakscope_follows = True
    loop_class.create_task = create_task


def _loop_running():
    asyncio_events = sys.modules.get("asyncio.events")
    return asyncio_events is not None and asyncio_events._get_running_loop() is not None


def _follow_loop(loop):
    """An event loop of another kind (uvloop's) is followed from now on, through its task factory,
    before any factory it had."""
    import asyncio

    if isinstance(loop, asyncio.BaseEventLoop):
        return
    previous = loop.get_task_factory()
    if getattr(previous, "_leakscope_follows", False):
        return

    def factory(loop, coro, **keywords):
        if previous is not None:
            return previous(loop, _followed(coro), **keywords)
        return asyncio.Task(_followed(coro), loop=loop, **keywords)

    factory._leakscope_follows = True
    loop.set_task_factory(factory)


def _follow_running_loop():
    import asyncio

    _follow_loop(asyncio.get_running_loop())


def _follow_uvloop(uvloop):
    """Every event loop uvloop makes from now on is followed from the start: uvloop.install()'s
    policy, uvloop.run() and loop factories (uvicorn's) all make theirs with new_event_loop()."""
    make_loop = getattr(uvloop, "new_event_loop", None)
    if make_loop is None or getattr(make_loop, "_leakscope_follows", False):
        return

    @functools.wraps(make_loop)
    def new_event_loop(*arguments, **keywords):
        loop = make_loop(*arguments, **keywords)
        _follow_loop(loop)
        return loop

    new_event_loop._leakscope_follows = True
    uvloop.new_event_loop = new_event_loop


# The modules whose event loops are followed, with what follows them once they are imported.
_FOLLOWED_MODULES = {"asyncio.base_events": _follow_asyncio_tasks, "uvloop": _follow_uvloop}


class _AfterImport:
    """Follows the event loops of the modules in _FOLLOWED_MODULES imported after leakscope, as
    soon as each is imported."""

    def find_spec(self, name, path=None, target=None):
        follow = _FOLLOWED_MODULES.get(name)
        if follow is None or name in sys.modules:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            follow(module)
            if all(each in sys.modules for each in _FOLLOWED_MODULES) and self in sys.meta_path:
                sys.meta_path.remove(self)

        spec.loader.exec_module = exec_module
        return spec


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


def _start_following():
    for name, follow in _FOLLOWED_MODULES.items():
        if name in sys.modules:
            follow(sys.modules[name])
    if _loop_running():  # imported by code the loop runs (a server importing its app)
        _follow_running_loop()
    if any(name not in sys.modules for name in _FOLLOWED_MODULES):
        sys.meta_path.insert(0, _AfterImport())


if _can_follow:
    _start_following()


# `pytest -p leakscope` loads this package as a pytest plugin. Its hooks live in pytest_plugin.py
# and are looked up here only when asked for (pytest lists a plugin's names with dir()): a plain
# `import leakscope` never imports pytest.
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
