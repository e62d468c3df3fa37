"""Links on a mount the plugin made are not followed (the mount's `nosymfollow` flag, set with
mount_setattr(2)): a store others can write may present a link at any name (gcsfuse shows an
object with `gcsfuse_symlink_target` as one), and fio or sysbench, run as root, would open
through it. The flag is the mount's, so it holds for every engine, without their help."""

from __future__ import annotations

import ctypes
import errno
import os

MOUNT_SETATTR = 442  # the same number on every architecture (the unified syscall table)
AT_EMPTY_PATH = 0x1000
MOUNT_ATTR_NOSYMFOLLOW = 0x00200000


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def forbid_links(mountpoint: str) -> str:
    """Set `nosymfollow` on the mount at `mountpoint`; "" when done, else why not."""
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        fd = os.open(mountpoint, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        return f"links on {mountpoint} may be followed: {exc.strerror or exc}"
    try:
        attr = _MountAttr(MOUNT_ATTR_NOSYMFOLLOW, 0, 0, 0)
        rc = libc.syscall(MOUNT_SETATTR, fd, b"", AT_EMPTY_PATH, ctypes.byref(attr),
                          ctypes.sizeof(attr))
        err = ctypes.get_errno() if rc != 0 else 0
    finally:
        os.close(fd)
    if not err:
        return ""
    why = "the kernel has no mount_setattr (Linux >= 5.12)" if err == errno.ENOSYS else os.strerror(err)
    return f"links on {mountpoint} may be followed: nosymfollow not set ({why})"
