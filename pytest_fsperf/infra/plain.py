"""What a command prints from files others may write (saved runs, results): its control
characters dropped on the way to the terminal, so a test id such as `t\\x1b]0;...` cannot
move root's cursor, retitle the window or write into the terminal's answer-back."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import TextIO

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but tab and newline


def plain(text: str) -> str:
    return CONTROL.sub("", text)


class Plain:
    """A text stream that writes through to `inner` with control characters dropped."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(plain(text))
        return len(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@contextlib.contextmanager
def plain_output(on: bool = True) -> Iterator[None]:
    """sys.stdout and sys.stderr made Plain while the block runs (where `on`)."""
    if not on:
        yield
        return
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Plain(out), Plain(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
