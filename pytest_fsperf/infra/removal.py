"""The child that removes a directory a record lists (infra/leftovers.py)."""

# Run in a child with a deadline (a work dir may sit on a mount that does not answer, and
# even lstat would then hang): prints what it did. Removes only the directory made (its
# device and inode as recorded; without them, only an empty one), a real directory of this
# user, held by descriptor from the check to the end: its contents through that descriptor
# (shutil.rmtree with dir_fd never follows a link), itself by name only while the name still
# holds it. What another user moves to the name is never touched.
SCRIPT = """
import os, shutil, stat, sys
p, ident = sys.argv[1], tuple(map(int, sys.argv[2:4])) if len(sys.argv) > 3 else None
name = os.path.basename(p)
try:
    parent = os.open(os.path.dirname(p), os.O_RDONLY | os.O_DIRECTORY)
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
except FileNotFoundError:
    sys.exit(0)
except OSError as exc:
    print(f"kept {p} (not a directory of this user, or reached through a symlink)")
    sys.exit(0)
st = os.fstat(fd)
if st.st_uid != os.geteuid() or (ident is not None and (st.st_dev, st.st_ino) != ident):
    print(f"kept {p} (not the directory the plugin made there)")
    sys.exit(0)
try:
    if ident is None and os.listdir(fd):
        print(f"kept {p} (its identity was not recorded and it is not empty)")
        sys.exit(0)
    for entry in os.scandir(fd):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.name, dir_fd=fd)
        else:
            os.unlink(entry.name, dir_fd=fd)
    now = os.stat(name, dir_fd=parent, follow_symlinks=False)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        print(f"kept {p} (its name was moved to another directory)")
        sys.exit(0)
    os.rmdir(name, dir_fd=parent)
except OSError as exc:
    print(f"could not remove {p} ({exc.strerror})")
    sys.exit(0)
print(f"removed {p}")
"""
