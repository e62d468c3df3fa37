#!/bin/bash
# Results files as this project's plugin wrote them at each commit named: its own code, run
# over a bindfs mount, two fio workloads (a write, a cold read) with thresholds.
#   tests/data/written/make.sh COMMIT...   (root; bindfs and fio on PATH)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'fusermount -u "$work/mnt" 2>/dev/null || true; for c in "$@"; do git -C "$repo" worktree remove -f "$work/at-$c" 2>/dev/null || true; done; rm -rf "$work"' EXIT
mkdir "$work/src" "$work/mnt" "$work/t"
bindfs "$work/src" "$work/mnt"
cat > "$work/t/test_canned.py" <<'PY'
from pytest_fsperf import fsperf


@fsperf(min_bw="1MB/s")
def test_seq_write(fsperf):
    fsperf.fio(name="seq_write", rw="write", bs="1M", size="32M", numjobs=1)


@fsperf(min_bw="1MB/s", max_cpu="400%")
def test_seq_read(fsperf):
    fsperf.cold()
    fsperf.fio(name="seq_read", rw="read", bs="1M", size="32M", numjobs=1)
PY
for c in "$@"; do
    git -C "$repo" worktree add -f "$work/at-$c" "$c" >/dev/null 2>&1
    name=$(git -C "$repo" log -1 --format=%cd --date=format:%m%d-%H%M "$c")-$(git -C "$repo" rev-parse --short=7 "$c")
    (cd "$work/t" && PYTHONPATH="$work/at-$c" python3 -m pytest -q -p no:cacheprovider -p no:xdist \
        test_canned.py --fsperf-mount="$work/mnt" --fsperf-json="$here/$name.json") || true
done
