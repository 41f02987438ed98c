"""Put on PYTHONPATH by leakscope's preload in a traced CPython: tells leakscope the name of every
threading.Thread, then runs the sitecustomize this one stands in front of, if there is one. It
imports neither the leakscope package nor asyncio: a program that imports neither pays for
neither (`import leakscope` makes the package follow asyncio's tasks, docs/PYTHON.md)."""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _run_the_next_sitecustomize():
    import importlib.machinery
    import importlib.util

    path = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
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


try:
    _name_python_threads()
finally:
    _run_the_next_sitecustomize()
