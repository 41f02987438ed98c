"""Put on PYTHONPATH by leakscope's preload in a traced CPython: tells leakscope the name of every
threading.Thread, then runs the sitecustomize this one stands in front of, if there is one."""
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


try:
    import leakscope

    leakscope._name_python_threads()
finally:
    _run_the_next_sitecustomize()
