"""What fio 3.33's client trusts in each frame its server sends (client.c: fio_handle_client
and the handlers it calls), checked on the whole frame as fio reassembles it, before one byte
of it reaches root's controller. The layouts are fio 3.33's on x86-64 (server.h, stat.h,
diskutil.h; sizes and offsets printed with offsetof against its headers): a fixed-size frame
must be exactly its size; an offset fio turns into a pointer must land, with what it counts,
inside the frame; a string fio prints with %s must end inside its field; a count fio indexes
by must name what was announced; a unit fio asserts on must be one it knows."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

QUIT, TEXT, TS, GS, ETA, PROBE, START, STOP, DU, SERVER_START, ADD_JOB, JOB_OPT = (
    1, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 22)
MORE = 1  # FIO_NET_CMD_F_MORE: a fragment of a larger payload follows
MAX_JOBS = 4096  # REAL_MAX_JOBS
MAX_TEXT = 1 << 20  # text bytes one connection may send (fio's own messages are a few KB)
TEXT_HEAD = 24  # struct cmd_text_pdu: level, buf_len, log_sec, log_usec, then buf

# struct cmd_ts_pdu (thread_stat, group_run_stats), then fio's extra parts
TS_SIZE = 184056
TS_STRINGS = ((0, 128), (128, 128), (272, 256))  # name, verror, description
TS_THREAD_NUMBER = 260
TS_UNIT_BASE, TS_SIG_FIGS, TS_KB_BASE = 183684, 183728, 183680
TS_BLOCK_INFOS, MAX_BLOCK_INFOS = 150904, 8192  # nr_block_infos (u64); MAX_NR_BLOCK_INFOS
TS_RS = 183888  # its group_run_stats
GS_KB_BASE, GS_UNIT_BASE, GS_SIG_FIGS = 144, 148, 152  # in a group_run_stats
KB_BASES = (1000, 1024)  # fio's kb_base option: stats are divided by it
TS_SS_DUR, TS_SS_STATE = 183732, 183740
TS_SS_OFFSETS = (183816, 183824)  # ss_iops_data_offset, ss_bw_data_offset
TS_PRIO_OFFSETS, TS_PRIO_COUNTS = 183832, 183856  # clat_prio_offset[3], nr_clat_prio[3]
CLAT_PRIO_STAT = 14912
SS_DATA = 32  # FIO_SS_DATA: the steady-state rings follow
MAX_PRIO = 256  # priorities a direction may list
MAX_SS_DUR = 1 << 20  # steady-state samples (one a second: 12 days)
# struct jobs_eta: fixed part, then run_str (at most __THREAD_RUNSTR_SZ(REAL_MAX_JOBS), NUL)
ETA_SIZE, ETA_UNIT_BASE, ETA_SIG_FIGS = 168, 148, 152
MAX_RUN_STR = 5 * MAX_JOBS
UNITS = 6  # N2S_*: num2str asserts units below it
MAX_SIG_FIGS = 10  # fio's option range
FIXED = {GS: 164, PROBE: 112, START: 8, STOP: 8, DU: 256, ADD_JOB: 25824, JOB_OPT: 200}
STRINGS = {PROBE: ((0, 64), (65, 32)), DU: ((0, 64),), JOB_OPT: ((8, 64), (72, 128))}
MAX_FRAME = {TEXT: TEXT_HEAD + MAX_TEXT, ETA: ETA_SIZE + MAX_RUN_STR + 8, QUIT: 1024,
             SERVER_START: 1024,
             TS: TS_SIZE + 3 * MAX_PRIO * CLAT_PRIO_STAT + 2 * 8 * MAX_SS_DUR, **FIXED}
MAX_CONNECTION = 1 << 30  # bytes of frames one connection may pass, all together


def _ends(payload: bytes, fields: tuple[tuple[int, int], ...]) -> bool:
    return all(b"\0" in payload[at:at + size] for at, size in fields)


def _inside(payload: bytes, offset: int, length: int, start: int) -> bool:
    return start <= offset and offset + length <= len(payload)


@dataclass
class Seen:
    """One connection's frames: a frame's fragments are held until it is whole and checked;
    what the server announced bounds what it sends after."""

    jobs: int | None = None  # START's count
    held: list[bytes] = field(default_factory=list)  # the payloads of the frame so far
    raw: list[bytes] = field(default_factory=list)  # its fragments as received
    opcode: int | None = None  # the held frame's
    size: int = 0  # its payload so far
    passed: int = 0  # bytes of the connection's frames passed
    text_sent: int = 0  # text bytes of the connection
    ready: list[bytes] = field(default_factory=list)  # whole frames checked, to pass on

    def frame(self, opcode: int, flags: int, payload: bytes, raw: bytes = b"") -> str:
        """Take one fragment (`raw`: its header and payload as received); why the frame may
        not reach fio's client, or "" (a whole frame checked is then in `ready`)."""
        if self.opcode is not None and opcode != self.opcode:
            return f"sent a fragment of command {opcode} inside command {self.opcode}: refused"
        self.opcode = opcode
        self.size += len(payload)
        self.passed += len(payload)
        if opcode == TEXT:
            self.text_sent += len(payload)
            if self.text_sent > MAX_TEXT:
                return f"sent more than {MAX_TEXT} bytes of text: refused (a flood)"
        if self.size > MAX_FRAME.get(opcode, 0):
            return (f"sent a command {opcode} of more than {MAX_FRAME.get(opcode, 0)} bytes: "
                    "refused (fio's are smaller)")
        if self.passed > MAX_CONNECTION:
            return f"sent more than {MAX_CONNECTION} bytes of frames: refused (a flood)"
        self.held.append(payload)
        self.raw.append(raw)
        if flags & MORE and payload:  # fio ends a frame at an empty fragment
            return ""
        whole, raw_parts = b"".join(self.held), b"".join(self.raw)
        self.held, self.raw, self.opcode, self.size = [], [], None, 0
        why = self.check(opcode, whole)
        if not why:
            self.ready.append(raw_parts)
        return why

    def check(self, opcode: int, payload: bytes) -> str:
        """Why this whole frame is not one fio's client may be handed, or ""."""
        if opcode in FIXED and len(payload) != FIXED[opcode]:
            return f"sent a command {opcode} of {len(payload)} bytes, not fio's {FIXED[opcode]}"
        if not _ends(payload, STRINGS.get(opcode, ())):
            return f"sent a command {opcode} whose text does not end in its field: refused"
        if opcode == TEXT:
            return _text(payload)
        if opcode == START:
            jobs = struct.unpack_from("<I", payload)[0]
            if self.jobs is not None or not 0 < jobs <= MAX_JOBS:
                return f"announced {jobs} jobs{' again' if self.jobs is not None else ''}: refused"
            self.jobs = jobs
        elif opcode == JOB_OPT:
            is_global, _cut, group = struct.unpack_from("<HHI", payload)
            if not is_global and (self.jobs is None or group >= self.jobs):
                return (f"sent an option for job group {group} of {self.jobs or 0} jobs: refused "
                        "(fio would index past its list)")
        elif opcode == TS:
            return _thread_status(payload, self.jobs)
        elif opcode == ETA:
            return _eta(payload)
        elif opcode == GS:
            return _group(payload, 0)
        return ""


def _text(payload: bytes) -> str:
    """fio's client writes a NUL at buf[buf_len] of the reassembled payload: fio's server
    sends buf_len = the text's length exactly; more than was sent is refused."""
    if len(payload) < TEXT_HEAD:
        return "sent a text too short to be fio's"
    length = struct.unpack_from("<I", payload, 4)[0]
    if TEXT_HEAD + length > len(payload):
        return (f"sent a text that says it is {length} bytes long in "
                f"{len(payload) - TEXT_HEAD}: refused (fio would write past it)")
    return ""


def _units(payload: bytes, unit_at: int, figs_at: int) -> str:
    unit, figs = struct.unpack_from("<I", payload, unit_at)[0], struct.unpack_from(
        "<i", payload, figs_at)[0]
    if unit >= UNITS or not 0 <= figs <= MAX_SIG_FIGS:
        return (f"sent unit {unit} and {figs} significant figures: refused (fio asserts on a "
                "unit it does not know)")
    return ""


def _group(payload: bytes, at: int) -> str:
    """A group_run_stats at `at`: its kb_base divides, its unit is asserted on."""
    if struct.unpack_from("<I", payload, at + GS_KB_BASE)[0] not in KB_BASES:
        return "sent a group status whose kb_base is not 1000 or 1024: refused (fio divides by it)"
    return _units(payload, at + GS_UNIT_BASE, at + GS_SIG_FIGS)


def _thread_status(payload: bytes, jobs: int | None) -> str:
    if len(payload) < TS_SIZE:
        return "sent a thread status too short to be fio's"
    number = struct.unpack_from("<I", payload, TS_THREAD_NUMBER)[0]
    if jobs is None or not 1 <= number <= jobs:
        return (f"sent the status of thread {number} of {jobs or 0} jobs: refused (fio would "
                "index past its list)")
    if not _ends(payload, TS_STRINGS):
        return "sent a thread status whose names do not end in their fields: refused"
    for d in range(3):
        count = struct.unpack_from("<I", payload, TS_PRIO_COUNTS + 4 * d)[0]
        offset = struct.unpack_from("<Q", payload, TS_PRIO_OFFSETS + 8 * d)[0]
        if count and (count > MAX_PRIO or offset % 8
                      or not _inside(payload, offset, count * CLAT_PRIO_STAT, TS_SIZE)):
            return (f"sent {count} priorities at offset {offset} in a status of {len(payload)} "
                    "bytes: refused (fio would read outside it)")
    if struct.unpack_from("<I", payload, TS_SS_STATE)[0] & SS_DATA:
        samples = struct.unpack_from("<Q", payload, TS_SS_DUR)[0]
        for at in TS_SS_OFFSETS:
            offset = struct.unpack_from("<Q", payload, at)[0]
            if (samples > MAX_SS_DUR or offset % 8
                    or not _inside(payload, offset, 8 * samples, TS_SIZE)):
                return (f"sent {samples} steady-state samples at offset {offset} in a status "
                        f"of {len(payload)} bytes: refused (fio would read outside it)")
    if struct.unpack_from("<Q", payload, TS_BLOCK_INFOS)[0] > MAX_BLOCK_INFOS:
        return (f"sent more than {MAX_BLOCK_INFOS} block infos: refused (fio would read past "
                "its array)")
    if struct.unpack_from("<I", payload, TS_KB_BASE)[0] not in KB_BASES:
        return "sent a thread status whose kb_base is not 1000 or 1024: refused (fio divides by it)"
    return _units(payload, TS_UNIT_BASE, TS_SIG_FIGS) or _group(payload, TS_RS)


def _eta(payload: bytes) -> str:
    if len(payload) < ETA_SIZE or b"\0" not in payload[ETA_SIZE:ETA_SIZE + MAX_RUN_STR + 1]:
        return ("sent a progress report without its job states ended: refused (fio copies "
                "them into a buffer of its own size)")
    return _units(payload, ETA_UNIT_BASE, ETA_SIG_FIGS)
