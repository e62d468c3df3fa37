"""A small FUSE daemon that forks, for the tests: a passthrough of SOURCE at MOUNTPOINT
whose first process, once the kernel's INIT arrives, forks a worker that serves every
request, and stays as a supervisor holding the same FUSE connection (as `juicefs mount -d`
does). The supervisor burns about SUPERVISOR_CPU of a core so that its share is not zero;
the worker holds WORKER_MB of touched memory so that its peak is known. Each writes its PID
to PIDFILE.ROLE.

    python3 forkfs.py SOURCE MOUNTPOINT PIDFILE
"""

from __future__ import annotations

import errno
import os
import sys
import time

from fuse import FUSE, FuseOSError, Operations  # fusepy

SUPERVISOR_CPU = 0.2  # share of a core
WORKER_MB = 160


class Passthrough(Operations):  # type: ignore[misc]
    def __init__(self, root: str, pidfile: str) -> None:
        self.root, self.pidfile = root, pidfile
        self.ballast = b""

    def _p(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def init(self, path: str) -> None:
        child = os.fork()
        if child:  # the supervisor: keeps the connection open, never reads it
            with open(self.pidfile + ".supervisor", "w") as f:
                f.write(str(os.getpid()))
            while True:
                done, _status = os.waitpid(child, os.WNOHANG)
                if done:
                    os._exit(0)
                t0 = time.process_time()
                while time.process_time() - t0 < SUPERVISOR_CPU * 0.1:
                    pass
                time.sleep(0.1 * (1 - SUPERVISOR_CPU))
        self.ballast = bytearray(WORKER_MB << 20)
        for i in range(0, len(self.ballast), 4096):
            self.ballast[i] = 1  # touched: resident
        with open(self.pidfile + ".worker", "w") as f:
            f.write(str(os.getpid()))

    def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
        try:
            st = os.lstat(self._p(path))
        except OSError as exc:
            raise FuseOSError(exc.errno) from None
        return {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_size", "st_uid", "st_gid",
                                            "st_atime", "st_mtime", "st_ctime")}

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._p(path))]

    def access(self, path: str, mode: int) -> None:
        if not os.access(self._p(path), mode):
            raise FuseOSError(errno.EACCES)

    def mkdir(self, path: str, mode: int) -> None:
        os.mkdir(self._p(path), mode)

    def rmdir(self, path: str) -> None:
        os.rmdir(self._p(path))

    def unlink(self, path: str) -> None:
        os.unlink(self._p(path))

    def rename(self, old: str, new: str) -> None:
        os.rename(self._p(old), self._p(new))

    def chmod(self, path: str, mode: int) -> None:
        os.chmod(self._p(path), mode)

    def chown(self, path: str, uid: int, gid: int) -> None:
        os.chown(self._p(path), uid, gid)

    def utimens(self, path: str, times: tuple[float, float] | None = None) -> None:
        os.utime(self._p(path), times)

    def truncate(self, path: str, length: int, fh: int | None = None) -> None:
        os.truncate(self._p(path), length)

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self._p(path))
        return {k: getattr(st, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize",
                                            "f_favail", "f_ffree", "f_files", "f_flag",
                                            "f_frsize", "f_namemax")}

    def open(self, path: str, flags: int) -> int:
        return os.open(self._p(path), flags)

    def create(self, path: str, mode: int, fi: object = None) -> int:
        return os.open(self._p(path), os.O_WRONLY | os.O_CREAT, mode)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        return os.pwrite(fh, data, offset)

    def flush(self, path: str, fh: int) -> None:
        pass

    def fsync(self, path: str, datasync: int, fh: int) -> None:
        os.fsync(fh)

    def release(self, path: str, fh: int) -> None:
        os.close(fh)


if __name__ == "__main__":
    source, mountpoint, pidfile = sys.argv[1:4]
    FUSE(Passthrough(source, pidfile), mountpoint, foreground=True, nothreads=True,
         big_writes=True, max_write=1 << 20, max_read=1 << 20)
