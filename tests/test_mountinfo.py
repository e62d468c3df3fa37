import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_fsperf.infra.mountinfo import Mount, find_mount, parse_line, unescape

LINES = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
42 22 0:39 / /tmp/exp/mnt rw,nosuid,nodev,relatime shared:5 - fuse /tmp/exp/src rw,user_id=0
43 22 0:40 / /mnt/with\\040space rw - fuse.s3fs s3fs rw,user_id=0
44 42 0:41 / /tmp/exp/mnt/inner rw - tmpfs tmpfs rw
45 22 0:42 / /tmp/exp/mnt rw - fuse.rclone remote: rw
"""


def mounts() -> list[Mount]:
    return [parse_line(line) for line in LINES.splitlines()]


def test_parse_fields():
    m = mounts()[1]
    assert (m.major, m.minor, m.mount_point, m.fstype, m.source) == (
        0, 39, "/tmp/exp/mnt", "fuse", "/tmp/exp/src")
    assert m.is_fuse and not mounts()[0].is_fuse and mounts()[2].is_fuse


def test_escaped_mount_point():
    assert mounts()[2].mount_point == "/mnt/with space"


def test_find_longest_and_topmost():
    ms = mounts()
    assert find_mount("/tmp/exp/mnt/inner/x", ms).fstype == "tmpfs"
    assert find_mount("/tmp/exp/mnt/a", ms).fstype == "fuse.rclone"  # stacked: last on top
    assert find_mount("/tmp/exp/mntx", ms).fstype == "ext4"  # prefix is not containment
    assert find_mount("/mnt/with space/d", ms).fstype == "fuse.s3fs"


@pytest.mark.parametrize("bad", ["", "1 2 3", "x 1 0:1 / / rw - ext4 /dev/x rw",
                                 "1 1 0:1 / / rw ext4 /dev/x rw"])
def test_malformed(bad):
    with pytest.raises(ValueError):
        parse_line(bad)


def _escape(path: str) -> str:
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in path)


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1))
def test_unescape_round_trip(name):
    assert unescape(_escape(name)) == name


@given(st.text(alphabet="ab /\t\\", min_size=1, max_size=20))
def test_parse_line_round_trip_of_mount_point(name):
    point = "/" + name
    line = f"50 22 0:77 / {_escape(point)} rw - fuse.x src rw"
    assert parse_line(line).mount_point == point
