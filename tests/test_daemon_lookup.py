"""Daemon discovery logic over a fake /proc (pyfakefs); the real thing is in test_bindfs.py."""

import pytest

from pytest_fsperf.infra.mountinfo import parse_line
from pytest_fsperf.mounts.daemon import find_daemon

FUSE_MOUNT = parse_line("42 22 0:39 / /mnt/a rw - fuse.bindfs /src rw")


def add_process(fs, pid, args, ppid=1, fuse_conn="absent", name="x"):
    fs.create_file(f"/proc/{pid}/stat", contents=f"{pid} ({name}) S {ppid} 1 1 0 -1 0 0 0 0 0 "
                   f"5 3 0 0 20 0 1 0 {1000 + pid} 0 0\n")
    fs.create_file(f"/proc/{pid}/cmdline", contents="\0".join(args) + "\0")
    fs.create_dir(f"/proc/{pid}/fd")
    if fuse_conn != "absent":
        fs.create_symlink(f"/proc/{pid}/fd/5", "/dev/fuse")
        line = f"fuse_connection:\t{fuse_conn}\n" if fuse_conn is not None else ""
        fs.create_file(f"/proc/{pid}/fdinfo/5", contents=f"pos:\t0\nflags:\t0100002\n{line}")


@pytest.fixture
def proc(fs):
    fs.create_file("/dev/fuse")
    add_process(fs, 1, ["/sbin/init"], ppid=0)
    return fs


def test_non_fuse_has_no_daemon(proc):
    lookup = find_daemon(parse_line("22 1 254:0 / / rw - ext4 /dev/vda rw"))
    assert lookup.daemon is None and lookup.note == "no daemon: ext4 is not a FUSE filesystem"


def test_connection_tells_two_mounts_apart(proc):
    add_process(proc, 200, ["bindfs", "/src2", "/mnt/b"], fuse_conn=40)
    add_process(proc, 100, ["bindfs", "/src", "/mnt/a"], fuse_conn=39)
    lookup = find_daemon(FUSE_MOUNT)
    assert lookup.daemon is not None and lookup.daemon.pid == 100
    assert lookup.daemon.start_time == 1100
    assert lookup.note == "found by fdinfo fuse_connection"


def test_auto_unmount_helper_and_children_are_not_the_daemon(proc):
    add_process(proc, 100, ["s3fs", "b", "/mnt/a"], fuse_conn=39)
    add_process(proc, 101, ["fusermount3", "-o", "auto_unmount"], ppid=100, fuse_conn=39)
    add_process(proc, 102, ["s3fs", "b", "/mnt/a"], ppid=100, fuse_conn=39)
    assert find_daemon(FUSE_MOUNT).daemon.pid == 100


def test_ambiguous_holders_are_reported_not_guessed(proc):
    add_process(proc, 100, ["d1"], fuse_conn=39)
    add_process(proc, 200, ["d2"], fuse_conn=39)
    lookup = find_daemon(FUSE_MOUNT)
    assert lookup.daemon is None and "100, 200" in lookup.note and "--fsperf-daemon-pid" in lookup.note


def test_old_kernel_falls_back_to_command_line(proc):
    add_process(proc, 300, ["bindfs", "/src", "/mnt/other"], fuse_conn=None)
    add_process(proc, 100, ["bindfs", "/src", "/mnt/a/"], fuse_conn=None)
    lookup = find_daemon(FUSE_MOUNT)
    assert lookup.daemon.pid == 100 and "command line" in lookup.note


def test_no_holder_for_this_connection(proc):
    add_process(proc, 100, ["bindfs"], fuse_conn=41)
    lookup = find_daemon(FUSE_MOUNT)
    assert lookup.daemon is None and "connection 39" in lookup.note


def test_no_readable_holder(proc):
    assert "no readable /dev/fuse holder" in find_daemon(FUSE_MOUNT).note
