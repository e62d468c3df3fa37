"""A fio server root's controller does not control is reached only through the relay: what
such a server asks beyond a benchmark's needs (send a file, write a log of its choosing)
ends the connection and is named; a server another local user put on a loopback port first
is not taken for the one meant. The server here is a fake: a short script speaking fio's
protocol (server.h of fio 3.33) and asking for /etc/shadow."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_fsperf.engine import fio_frames, fio_relay
from tests.conftest import need

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"

FAKE = r'''
import socket, struct, sys, threading
def crc16(data):
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc
def frame(opcode, payload, flags=0):
    head = struct.pack("<HHIQI", 97, opcode, flags, 0, len(payload))
    return head + struct.pack("<HH", crc16(head), crc16(payload)) + payload
def fragments(opcode, payload):
    parts = [payload[i:i + 1024] for i in range(0, len(payload), 1024)]
    return b"".join(frame(opcode, p, 1 if i < len(parts) - 1 else 0) for i, p in enumerate(parts))
port_file, got_file, ask = sys.argv[1], sys.argv[2], sys.argv[3]
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(4)
open(port_file, "w").write(str(srv.getsockname()[1]))
while True:
    conn, _ = srv.accept()
    def drain(c=conn):
        with open(got_file, "ab") as out:
            while data := c.recv(65536):
                out.write(data)
                out.flush()
    threading.Thread(target=drain, daemon=True).start()
    if ask == "sendfile":
        conn.sendall(frame(21, b"/etc/shadow".ljust(256, b"\0")))
    elif ask == "jobopt":  # one job, then an option for job group 1000 (fio indexes unchecked)
        conn.sendall(frame(11, struct.pack("<II", 1, 1)))
        conn.sendall(frame(22, struct.pack("<HHI", 0, 0, 1000) + b"bs".ljust(64, b"\0")
                           + b"4k".ljust(128, b"\0")))
    elif ask == "text":  # a text whose length reaches past the heap block fio allocates
        conn.sendall(frame(5, struct.pack("<IIQQ", 0, 0x7FFFFFF0, 0, 0) + b"x"))
    elif ask == "clatprio":  # a status whose priorities lie 1 TiB past it (fio: SIGBUS)
        conn.sendall(frame(11, struct.pack("<II", 1, 1)))
        ts = bytearray(184056)
        struct.pack_into("<I", ts, 260, 1)
        struct.pack_into("<Q", ts, 183832, 1 << 40)
        struct.pack_into("<I", ts, 183856, 1)
        conn.sendall(fragments(6, bytes(ts)))
    elif ask == "gsflood":  # one group status of 512 MiB in 1 KiB fragments
        try:
            for _ in range(512 * 1024):
                conn.sendall(frame(7, bytes(1024), 1))
        except OSError:
            pass
    elif ask == "update":  # an UPDATE_JOB fio never asked for: it calls a NULL handler
        conn.sendall(frame(18, struct.pack("<IH", 0, 0).ljust(16, b"\0")))
    else:  # an I/O log of the server's choosing, to <name>.<server>
        pdu = struct.pack("<QIIIIII", 1, 1, 0, 0, 0, 0, 0) + b"planted".ljust(256, b"\0")
        conn.sendall(frame(17, pdu + b"\x01" * 64))
'''


def _fake_server(tmp_path: Path, ask: str) -> tuple[subprocess.Popen[bytes], int, Path]:
    script, port_file, got = tmp_path / "fake.py", tmp_path / "port", tmp_path / "got"
    script.write_text(FAKE)
    proc = subprocess.Popen([sys.executable, str(script), str(port_file), str(got), ask])
    deadline = time.monotonic() + 10
    while not (port_file.exists() and port_file.read_text()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    return proc, int(port_file.read_text()), got


@contextlib.contextmanager
def nobodys_listener(answers: bool, address: str = "127.0.0.1") -> Iterator[int]:
    """A loopback port nobody listens on (answers: accepts and sends 24 bytes of its own);
    its port. Skips where the test cannot act as another user."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    code = (f"import socket, time\ns = socket.socket()\ns.bind(({address!r}, 0))\ns.listen(1)\n"
            "print(s.getsockname()[1], flush=True)\n"
            + ("c, _ = s.accept()\nc.sendall(bytes(24))\n" if answers else "") + "time.sleep(60)\n")
    theirs = subprocess.Popen([SYSTEM_PYTHON, "-c", code], stdout=subprocess.PIPE, text=True,
                              cwd="/", user=NOBODY, group=NOBODY, extra_groups=[])
    try:
        assert theirs.stdout is not None
        yield int(theirs.stdout.readline())
    finally:
        theirs.kill()
        theirs.wait()


def _one_client(pytester: pytest.Pytester, tmp_path: Path, port: int
                ) -> tuple[pytest.RunResult, Path]:
    """A test writing through one fio server at 127.0.0.1:port, run; and its mount."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    pytester.makepyfile("""
        def test_remote(fsperf):
            fsperf.fio(name="w", clients=1, rw="write", bs="1M", size="8M")
    """)
    return pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-mount={mount}",
                              "--fsperf-plain-dir=1", f"--fsperf-fio-servers=127.0.0.1:{port}"), mount


@pytest.mark.parametrize("ask, said", [
    ("sendfile", "asked the controller to SENDFILE: send it a file of this machine: refused"),
    ("iolog", "asked the controller to IOLOG: write an I/O log of its choosing: refused"),
    ("jobopt", "sent an option for job group 1000 of 1 jobs: refused"),
    ("text", "sent a text that says it is 2147483632 bytes long in 1: refused"),
    ("update", "asked the controller to UPDATE_JOB, unasked: refused"),
    ("clatprio", "sent 1 priorities at offset 1099511627776 in a status of 184056 bytes: refused"),
    ("gsflood", "sent a command 7 of more than 164 bytes: refused"),
])
def test_a_server_that_asks_for_a_file_or_writes_a_log_is_cut_off_and_named(pytester, tmp_path,
                                                                              ask, said):
    """As found: root's fio client sent /etc/shadow and the controller's SSH key to the
    server; with a symlink at the predictable log name, root wrote a line of the server's."""
    need("fio")
    proc, port, got = _fake_server(tmp_path, ask)
    try:
        result, mount = _one_client(pytester, tmp_path, port)
    finally:
        proc.kill()
        proc.wait()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*fio server 127.0.0.1:{port} {said}*"])
    sent = got.read_bytes() if got.exists() else b""
    assert b"root:" not in sent  # nothing of /etc/shadow reached the server
    assert not list(Path(pytester.path).glob("planted*")) and not list(mount.glob("planted*"))


def test_a_loopback_port_another_user_listens_on_is_not_the_server_meant(pytester, tmp_path):
    """As found: a local user listening on the named loopback port before the session got
    the controller's connection."""
    need("fio")
    with nobodys_listener(answers=False) as port:
        result, _mount = _one_client(pytester, tmp_path, port)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*fio server 127.0.0.1:{port} is listening as uid {NOBODY}, not "
                                 "root or you*"])


@pytest.mark.unit
def test_only_a_benchmarks_frames_pass():
    assert fio_relay._refusal(97, 6, 1024) == ""  # thread status
    assert "SENDFILE" in fio_relay._refusal(97, 21, 256)
    assert "VTRIGGER" in fio_relay._refusal(97, 20, 0)
    assert "command 99" in fio_relay._refusal(97, 99, 0)
    assert "protocol 96" in fio_relay._refusal(96, 6, 0)
    assert "frame of 4096 bytes" in fio_relay._refusal(97, 6, 4096)
    assert fio_relay.HEADER.size == 24  # struct fio_net_cmd before its payload


@pytest.mark.unit
def test_a_relay_passes_what_the_controller_sends_and_cuts_a_refused_frame(tmp_path):
    """The relay alone, between two socket pairs of this test's."""
    server = socket.socket(socket.AF_UNIX)
    upstream = str(tmp_path / "up.sock")
    server.bind(upstream)
    server.listen(1)
    relay = fio_relay.Relay((socket.AF_UNIX, upstream), str(tmp_path / "relay.sock"), "fake")
    with fio_relay.relayed([relay]):
        client = socket.socket(socket.AF_UNIX)
        client.connect(relay.path)
        conn, _ = server.accept()
        client.sendall(b"job file")
        assert conn.recv(100) == b"job file"
        text = struct.pack("<IIQQ", 0, 3, 0, 0) + b"hi\n"  # fio's cmd_text_pdu
        ok = fio_relay.HEADER.pack(97, 5, 0, 0, len(text), 0, 0) + text
        conn.sendall(ok)
        assert client.recv(100) == ok
        conn.sendall(fio_relay.HEADER.pack(97, 21, 0, 0, 0, 0, 0) + struct.pack("<I", 0))
        client.settimeout(5)
        assert client.recv(100) == b""  # cut off
        assert relay.refused == ["asked the controller to SENDFILE: send it a file of this "
                                 "machine: refused"]
        client.close()
        conn.close()
    server.close()
    assert not os.path.exists(relay.path)


@pytest.mark.fio
def test_a_server_another_user_put_on_the_port_after_the_check_is_refused_on_connect(tmp_path):
    """The worst of the loopback case: nobody binds the port after the check before the run
    (the user's own server not up yet, or restarting). The relay asks, for each connection,
    who accepted it, and cuts it off before the controller hears a word."""
    if os.geteuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to act as another user")
    with nobodys_listener(answers=True) as port:
        relay = fio_relay.Relay((socket.AF_INET, ("127.0.0.1", port)), str(tmp_path / "r.sock"),
                                f"127.0.0.1:{port}")
        with fio_relay.relayed([relay]):
            client = socket.socket(socket.AF_UNIX)
            client.connect(relay.path)
            client.settimeout(10)
            assert client.recv(100) == b""  # not one byte of theirs passed
            client.close()
        assert relay.refused == [f"was answered as uid {NOBODY}, not root or you: not the "
                                 "server you meant"]


@pytest.mark.unit
def test_what_fio_indexes_by_must_name_a_job_the_server_announced():
    """As found: START (1 job) then JOB_OPT with groupid 1000: root's fio controller died of
    SIGSEGV. A status's thread number is bounded the same way (0 indexes before the list)."""
    def opt(group: int, is_global: int = 0) -> bytes:
        return struct.pack("<HHI", is_global, 0, group) + bytes(192)

    def ts(number: int) -> bytes:
        return status(number)

    seen = fio_frames.Seen()
    assert "job group 0 of 0 jobs" in seen.frame(22, 0, opt(0))  # before START
    assert seen.frame(22, 0, opt(7, is_global=1)) == ""  # a global option indexes nothing
    assert "announced 0 jobs" in fio_frames.Seen().frame(11, 0, struct.pack("<II", 0, 1))
    assert "announced 5000 jobs" in fio_frames.Seen().frame(11, 0, struct.pack("<II", 5000, 1))
    assert seen.frame(11, 0, struct.pack("<II", 2, 1)) == ""
    assert "again" in seen.frame(11, 0, struct.pack("<II", 2, 1))
    assert seen.frame(22, 0, opt(1)) == "" and "job group 2 of 2" in seen.frame(22, 0, opt(2))
    whole = ts(2)
    assert seen.frame(6, 1, whole[:100]) == "" and seen.frame(6, 1, whole[100:1024]) == ""
    assert seen.frame(6, 0, whole[1024:]) == ""  # fragments: the number is in the first
    assert "thread 0 of 2 jobs" in seen.frame(6, 0, ts(0))
    assert "thread 3 of 2 jobs" in seen.frame(6, 0, ts(3))


@pytest.mark.unit
def test_any_address_of_this_machine_is_local_not_only_loopback():
    """As found: a listener on the machine's own non-loopback address was taken for a remote
    server, so no one asked who listened there."""
    import psutil

    assert fio_relay.local(("127.0.0.2", 1)) and fio_relay.local(("::1", 1, 0, 0))
    assert fio_relay.local(("0.0.0.0", 1)) and fio_relay.local(("::", 1, 0, 0))
    own = [a.address for addrs in psutil.net_if_addrs().values() for a in addrs
           if a.family == socket.AF_INET and not a.address.startswith("127.")]
    for address in own:
        assert fio_relay.local((address, 8765)), address
    assert not fio_relay.local(("192.0.2.7", 1))  # TEST-NET-1: no machine's
    assert not fio_relay.local("/tmp/x.sock")


def test_another_users_listener_on_this_machines_own_address_is_refused(pytester, tmp_path):
    import psutil

    need("fio")
    own = [a.address for addrs in psutil.net_if_addrs().values() for a in addrs
           if a.family == socket.AF_INET and not a.address.startswith("127.")]
    if not own:
        pytest.skip("this machine has no non-loopback IPv4 address")
    with nobodys_listener(answers=False, address=own[0]) as port:
        mount = tmp_path / "mnt"
        mount.mkdir()
        pytester.makepyfile("""
            def test_remote(fsperf):
                fsperf.fio(name="w", clients=1, rw="write", bs="1M", size="8M")
        """)
        result = pytester.runpytest("-p", "no:cacheprovider", f"--fsperf-mount={mount}",
                                    "--fsperf-plain-dir=1", f"--fsperf-fio-servers={own[0]}:{port}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*fio server {own[0]}:{port} is listening as uid {NOBODY}*"])


def status(number: int, size: int = fio_frames.TS_SIZE) -> bytes:
    """A thread status as fio 3.33 sends one: its names ended, thread `number`."""
    ts = bytearray(size)
    struct.pack_into("<I", ts, fio_frames.TS_THREAD_NUMBER, number)
    struct.pack_into("<I", ts, fio_frames.TS_KB_BASE, 1024)
    struct.pack_into("<I", ts, fio_frames.TS_RS + fio_frames.GS_KB_BASE, 1024)
    return bytes(ts)


def _text(buf_len: int, body: bytes, flags: int = 0) -> tuple[int, bytes]:
    return flags, struct.pack("<IIQQ", 0, buf_len, 0, 0) + body


@pytest.mark.unit
@pytest.mark.parametrize(("frames", "why"), [
    # fio's client writes a NUL at buf[buf_len]: 0x7FFFFFF0 wrote far past the heap block,
    # 0xFFFFFFF0 (-16) hung it for 124 s
    ([_text(0x7FFFFFF0, b"x")], "says it is 2147483632 bytes long in 1"),
    ([_text(0xFFFFFFF0, b"")], "says it is 4294967280 bytes long in 0"),
    ([(0, b"short")], "a text too short"),
    # a text in fragments is judged whole, as fio reassembles it
    ([_text(10, b"12345", flags=1), (0, b"123456")], None),
    ([_text(20, b"12345", flags=1), (0, b"123456")], "says it is 20 bytes long in 11"),
])
def test_a_servers_text_must_be_as_long_as_it_says(frames, why):
    seen = fio_frames.Seen()
    said = [seen.frame(fio_frames.TEXT, flags, payload) for flags, payload in frames]
    if why is None:
        assert said == ["", ""]
    else:
        assert why in said[-1], said


@pytest.mark.unit
def test_a_text_flood_is_cut_off_and_fios_own_text_passes():
    seen = fio_frames.Seen()
    line = b"fio: a line of the server's own, as fio sends them\n"
    frames = 0
    while not (why := seen.frame(fio_frames.TEXT, 0, _text(len(line), line)[1])):
        frames += 1
    assert frames * (24 + len(line)) <= fio_frames.MAX_TEXT < (frames + 1) * (24 + len(line)) + 1
    assert "more than 1048576 bytes of text" in why


@pytest.mark.unit
def test_an_unasked_update_job_is_refused():
    """fio 3.33 calls a NULL handler for an UPDATE_JOB it did not ask for (SIGSEGV, root's
    controller gone): the controller never asks, so the relay passes none."""
    assert "UPDATE_JOB" in fio_relay._refusal(97, 18, 8)


def _fixed(opcode: int, size: int, at: int = 0, value: bytes = b"") -> bytes:
    payload = bytearray(size)
    payload[at:at + len(value)] = value
    return bytes(payload)


@pytest.mark.unit
@pytest.mark.parametrize(("opcode", "payload", "why"), [
    (7, bytes(165), "command 7 of more than 164 bytes"),  # GS: exactly its size
    (7, bytes(100), "command 7 of 100 bytes, not fio's 164"),
    (12, bytes(4), "command 12 of 4 bytes, not fio's 8"),  # STOP
    (10, _fixed(10, 112, 0, b"h" * 64), "text does not end in its field"),  # PROBE hostname
    (10, _fixed(10, 112, 65, b"3" * 32), "text does not end in its field"),  # its version
    (13, _fixed(13, 256, 0, b"d" * 64), "text does not end in its field"),  # DU's disk name
    (9, bytes(100), "progress report without its job states ended"),  # ETA: too short
    (9, bytes(168) + b"R" * 30000, "more than"),  # ETA: run_str past fio's buffer
    (9, _fixed(9, 169, 148, struct.pack("<I", 9)), "unit 9"),  # num2str asserts on it
    (15, bytes(25823), "command 15 of 25823 bytes"),  # ADD_JOB
])
def test_every_frame_fio_trusts_is_checked_as_fio_reads_it(opcode, payload, why):
    """fio 3.33's client casts each frame to its struct and reads it: a short frame is read
    past its end, a name without a NUL is printed past its field, a run_str is strcpy'd into
    a buffer of fio's size, a unit fio does not know aborts it."""
    seen = fio_frames.Seen()
    said = seen.frame(opcode, 0, payload)
    assert why in said, said
    assert not seen.ready


@pytest.mark.unit
def test_fios_own_frames_pass_whole_and_are_passed_on_whole():
    seen = fio_frames.Seen()
    start = struct.pack("<II", 2, 1)
    assert seen.frame(11, 0, start, b"H" + start) == "" and seen.ready == [b"H" + start]
    eta = bytes(168) + b"WW\0"
    assert seen.frame(9, 0, eta) == ""
    whole = status(2, fio_frames.TS_SIZE + 2 * 8 * 4)
    ts = bytearray(whole)
    struct.pack_into("<I", ts, fio_frames.TS_SS_STATE, fio_frames.SS_DATA)
    struct.pack_into("<Q", ts, fio_frames.TS_SS_DUR, 4)
    struct.pack_into("<QQ", ts, fio_frames.TS_SS_OFFSETS[0], fio_frames.TS_SIZE,
                     fio_frames.TS_SIZE + 32)
    seen.ready.clear()
    parts = [bytes(ts[i:i + 1024]) for i in range(0, len(ts), 1024)]
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        assert seen.frame(6, 0 if last else 1, part, b"h" + part) == ""
        assert bool(seen.ready) == last  # nothing passes before the frame is whole
    assert seen.ready == [b"".join(b"h" + p for p in parts)]
    struct.pack_into("<Q", ts, fio_frames.TS_SS_OFFSETS[1], fio_frames.TS_SIZE + 40)
    assert "steady-state samples" in seen.frame(6, 0, bytes(ts))  # the ring past the end


@pytest.mark.unit
def test_a_fragment_of_another_command_or_a_flood_of_whole_ones_is_refused(monkeypatch):
    seen = fio_frames.Seen()
    assert seen.frame(6, 1, bytes(1024)) == ""
    assert "command 7 inside command 6" in seen.frame(7, 0, bytes(164))
    monkeypatch.setattr(fio_frames, "MAX_CONNECTION", 10_000)
    flood = fio_frames.Seen()
    group = bytearray(164)
    struct.pack_into("<I", group, fio_frames.GS_KB_BASE, 1024)
    said = [flood.frame(7, 0, bytes(group)) for _ in range(61)]
    assert said[:60] == [""] * 60 and "more than 10000 bytes of frames" in said[60]


@pytest.mark.unit
@pytest.mark.parametrize(("at", "value", "fmt", "why"), [
    (fio_frames.TS_BLOCK_INFOS, 8193, "<Q", "more than 8192 block infos"),
    (fio_frames.TS_KB_BASE, 0, "<I", "kb_base is not 1000 or 1024"),  # fio divides by it
    (fio_frames.TS_RS + fio_frames.GS_KB_BASE, 7, "<I", "kb_base is not 1000 or 1024"),
    (fio_frames.TS_RS + fio_frames.GS_UNIT_BASE, 6, "<I", "unit 6"),  # num2str asserts
    (fio_frames.TS_UNIT_BASE, 99, "<I", "unit 99"),
])
def test_the_deeper_counts_and_units_of_a_status_are_bounded(at, value, fmt, why):
    """What the last round left open ("the deeper counts of a status frame are not bounded"):
    fio sorts nr_block_infos entries of a fixed array, divides by kb_base and asserts on a
    group's unit."""
    seen = fio_frames.Seen()
    assert seen.frame(11, 0, struct.pack("<II", 1, 1)) == ""
    ts = bytearray(status(1))
    assert seen.frame(6, 0, bytes(ts)) == ""
    struct.pack_into(fmt, ts, at, value)
    assert why in seen.frame(6, 0, bytes(ts))
    group = bytearray(164)
    struct.pack_into("<I", group, fio_frames.GS_KB_BASE, 1000)
    assert seen.frame(7, 0, bytes(group)) == ""
    struct.pack_into("<I", group, fio_frames.GS_UNIT_BASE, 6)
    assert "unit 6" in seen.frame(7, 0, bytes(group))
