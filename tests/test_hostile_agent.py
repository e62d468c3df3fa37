"""A host's agent that lies: each reply is held to its shape, bounded and cleaned before
anything is made of it. The agent runs in a real execnet gateway (a local Python, no SSH),
speaking the channel as the real one does but answering what an attacker would."""

from __future__ import annotations

import pytest

from pytest_fsperf.hosts import replies
from pytest_fsperf.hosts.link import HostError, Link
from pytest_fsperf.hosts.spec import Host

execnet = pytest.importorskip("execnet")

HOSTILE = """
import time
answers = {
    "hello": {"ok": {"version": 1, "protocol": "2"}},
    "big": {"error": "E" * 400_000_000},
    "note": {"ok": {"daemon": None, "note": "\\x1b[2K\\r1 passed\\x1b[0m", "time": 1.0}},
    "types": {"ok": {"daemon": {"pid": "1"}, "note": "", "time": 1.0}},
    "extra": {"ok": 1.0, "also": "x"},
    "socket": {"ok": "/tmp/x.sock:evil.example:22"},
    "cold": {"ok": "whatever I like"},
    "huge": {"ok": {"daemon": None, "note": "", "time": 10 ** 4000}},
}
while True:
    req = channel.receive()
    if req is None:
        break
    channel.send(answers[req["args"]["say"]])
"""


@pytest.fixture
def hostile():
    group = execnet.Group()
    gateway = group.makegateway("popen")
    link = Link(Host("evil", "/mnt"), 0, group, gateway.remote_exec(HOSTILE))
    yield link
    link.channel.send(None)
    group.terminate(timeout=5)


@pytest.mark.fio
@pytest.mark.parametrize("op, say, said", [
    ("hello", "hello", "its reply was refused: hello has no daemon, fstype"),
    ("stop", "big", "its reply was refused: its stop reply is larger than 1048576 characters"),
    ("stop", "types", "its reply was refused: stop.daemon has no cpu_exact, cpu_percent"),
    ("clock", "extra", "its reply was refused: its clock reply is not"),
    ("cold", "cold", "its reply was refused: cold is not one of cold: drop_caches"),
    ("stop", "huge", "its reply was refused: stop.time is past 4.61e+18"),
])
def test_a_reply_of_the_wrong_shape_or_size_is_refused_naming_the_host(hostile, op, say, said):
    hostile.send(op, say=say)
    with pytest.raises(HostError) as got:
        hostile.receive(op)
    text = str(got.value)
    assert text.startswith("host evil: ") and said in text, text
    assert len(text) < 1000 and "\n" not in text


@pytest.mark.fio
def test_control_characters_in_a_note_never_reach_a_terminal(hostile):
    hostile.send("stop", say="note")
    got = hostile.receive("stop")
    assert got["note"] == " [2K 1 passed [0m"  # as text, never as the terminal's commands


@pytest.mark.unit
def test_the_shapes_check_types_deep_inside_a_reply():
    daemon = {"pid": 1, "wall_seconds": 1.0, "cpu_seconds": 0.5, "cpu_percent": 50.0,
              "peak_rss_bytes": 10, "peak_rss_method": "VmHWM", "read_bytes": None,
              "write_bytes": 1, "cpu_window": "I/O", "cpu_window_seconds": 1.0, "cpu_exact": False,
              "processes": [{"pid": 2, "role": "worker", "command": "x", "cpu_seconds": 0.1,
                             "peak_rss_bytes": True}]}
    with pytest.raises(replies.BadReply, match=r"stop.daemon.processes\[0\].peak_rss_bytes is not "
                                               "a whole number"):
        replies.answer("stop", {"ok": {"daemon": daemon, "note": "", "time": 1.0}})
    daemon["processes"][0]["peak_rss_bytes"] = None
    assert replies.answer("stop", {"ok": {"daemon": daemon, "note": "", "time": 1.0}})["daemon"] == daemon
    with pytest.raises(replies.BadReply, match="clock is not a number"):
        replies.answer("clock", {"ok": float("nan")})
    with pytest.raises(replies.Failed, match="boom  there"):
        replies.answer("cold", {"error": "boom\x07\nthere"})


@pytest.mark.unit
def test_a_fio_socket_path_that_is_not_a_plain_path_is_not_given_to_ssh():
    from pytest_fsperf.hosts.link import REMOTE_SOCKET

    assert REMOTE_SOCKET.fullmatch("/tmp/pytest-fsperf-host-ab12/fio-0.sock")
    for bad in ("/tmp/x.sock:evil.example:22", "relative.sock", "/tmp/a b", "-oProxyCommand=x"):
        assert not REMOTE_SOCKET.fullmatch(bad)
