"""fio's own size syntax, for scaling job sizes.

With the default kb_base=1024, fio reads k/m/g/t/p (any case, optional trailing b)
as powers of 1024 and - backwards, for old scripts - 'ki'/'kib' as powers of 1000.
kb_base=1000 swaps the two. Checked against fio 3.33: 1k=1024, 1KiB=1000, 1MiB=10^6.
"""

from __future__ import annotations

import re

_SIZE = re.compile(r"^\s*([0-9]{1,20})\s*([kmgtp]?)(i?)(b?)\s*$", re.IGNORECASE)
MAX_SIZE = 2**63 - 1  # fio keeps sizes in unsigned 64 bits; a file's offset is signed
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_fio_size(text: str, kb_base: int = 1024) -> int:
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text[:40]!r} is not a fio size (a number of at most 20 digits, "
                         "then k, m, g, t or p)")
    number, prefix, iec, _b = match.groups()
    power = _POWERS[prefix.lower()]
    base = kb_base if not iec else (1000 if kb_base == 1024 else 1024)
    multiplier: int = base**power  # int ** non-negative int
    size = int(number) * multiplier
    if size > MAX_SIZE:
        raise ValueError(f"{text[:40]!r} is past any size fio takes (2^63 bytes)")
    return size


def check_size(text: str, kb_base: int = 1024) -> None:
    """A size, a percentage or an 'a-b' / 'a:b' range of sizes, each part a whole number
    of at least one byte (fio would take "-1M" as a range from 0). ValueError says why."""
    if text.strip().endswith("%"):
        number = text.strip()[:-1]
        if not number.isdigit() or not 0 < int(number) <= 100:
            raise ValueError("a percentage must be from 1% to 100%")
        return
    parts = text.split("-") if "-" in text else text.split(":")
    if len(parts) > 2:
        raise ValueError("not a fio size, nor a range of two")
    for part in parts:
        if parse_fio_size(part, kb_base) < 1:
            raise ValueError("a size must be at least one byte")


def scale_size(text: str, factor: float, block: int = 1, kb_base: int = 1024) -> str:
    """Scale one fio size (or an 'a-b' / 'a:b' range); percentages pass unchanged.
    The result is whole bytes, a multiple of `block`, at least one block."""
    if factor == 1 or text.strip().endswith("%"):
        return text
    for sep in ("-", ":"):
        if sep in text:
            return sep.join(scale_size(part, factor, block, kb_base) for part in text.split(sep))
    scaled = int(parse_fio_size(text, kb_base) * factor)
    block = max(block, 1)
    return str(max(block, scaled - scaled % block))


def scale_count(text: str, factor: float) -> str:
    if factor == 1:
        return text
    return str(max(1, round(int(text) * factor)))


def job_bytes(job: dict[str, str]) -> int | None:
    """The bytes a job's files take on the filesystem: each job's files (nrfiles x filesize,
    or size), once where the jobs share one named file; None where fio decides (a size in
    percent, a size fio reads off the device)."""
    kb_base = 1000 if job.get("kb_base") == "1000" else 1024
    try:
        if "nrfiles" in job and "filesize" in job:
            per = int(job["nrfiles"]) * parse_fio_size(job["filesize"], kb_base)
        elif "size" in job:
            per = parse_fio_size(job["size"], kb_base)
        else:
            return None
        jobs = 1 if "filename" in job else int(job.get("numjobs", "1"))
    except ValueError:
        return None
    return per * max(1, jobs)
