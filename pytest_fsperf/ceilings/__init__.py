"""Ceilings: the most the paths beside a filesystem move for the same work (the object store
read straight, FUSE with nothing behind it, tmpfs), to print each workload as a fraction.

model.py (the Ceiling), store.py, fuse.py, cache.py (once per session and shape),
machine.py (fsperf bench --ceilings). Import the submodules: this package imports nothing,
so that result.py may hold Ceilings without a loop."""
