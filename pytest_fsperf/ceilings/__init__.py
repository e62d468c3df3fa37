"""Ceilings: the most the paths beside a filesystem move for the same work (the object store
read straight, FUSE with nothing behind it, tmpfs), to print each workload as a fraction."""

from .fuse import fuse_ceilings
from .model import Ceiling, Path

__all__ = ["Ceiling", "Path", "fuse_ceilings"]
