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


BLOCKS = ("bs", "blocksize", "ba", "blockalign")  # a size, or read,write[,trim]
RANGES = ("bsrange", "blocksize_range")  # low-high, for read,write[,trim]
OFFSETS = ("offset", "offset_increment")  # a size of 0 or more, or a percentage
COUNTS = {"loops": (1, 1_000_000), "numjobs": (1, 4096)}  # fio's REAL_MAX_JOBS
MOST_THINK_US = 3_600_000_000  # thinktime: an hour between I/Os at most
CHECKED = (*BLOCKS, *RANGES, *OFFSETS, *COUNTS, "thinktime")


def check_value(key: str, text: str, kb_base: int = 1024) -> None:
    """The options fio would refuse, or take to mean nothing, that a typo gives: a block size
    of no bytes, a range whose low end is past its high, no loops or jobs, a negative offset,
    a think time of years. ValueError says why."""
    if key in BLOCKS:
        for part in text.split(","):
            if part.strip() and parse_fio_size(part, kb_base) < 1:
                raise ValueError("a block size must be at least one byte")
    elif key in RANGES:
        for part in text.split(","):
            low, sep, high = part.partition("-") if "-" in part else part.partition(":")
            if not sep or not 1 <= parse_fio_size(low, kb_base) <= parse_fio_size(high, kb_base):
                raise ValueError("each range must be LOW-HIGH, sizes of one byte or more, "
                                 "LOW not past HIGH")
    elif key in OFFSETS:
        if text.strip().endswith("%"):
            if not text.strip()[:-1].isdigit() or int(text.strip()[:-1]) > 100:
                raise ValueError("a percentage must be from 0% to 100%")
        else:
            parse_fio_size(text, kb_base)
    elif key in COUNTS:
        least, most = COUNTS[key]
        if not re.fullmatch(r"[0-9]{1,10}", text.strip()) or not least <= int(text) <= most:
            raise ValueError(f"must be a whole number from {least} to {most:,}")
    elif key == "thinktime":
        number = re.fullmatch(r"\s*([0-9]{1,20})\s*(us|ms|s|m|h)?\s*", text)
        scale = {None: 1, "us": 1, "ms": 1000, "s": 10**6, "m": 6 * 10**7, "h": 36 * 10**8}
        if not number or int(number[1]) * scale[number[2]] > MOST_THINK_US:
            raise ValueError("must be a time of at most an hour (microseconds, or us/ms/s/m/h)")
