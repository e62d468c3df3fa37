"""The FUSE request trace: parsing the kernel's trace text, the figures and thresholds made
from it (logic here; tests/test_fuse_requests.py traces real bindfs mounts)."""

from __future__ import annotations

import os

import pytest

from pytest_fsperf.errors import UsageError
from pytest_fsperf.judge.thresholds import judge
from pytest_fsperf.measure import fusetrace
from pytest_fsperf.measure.fusetrace import Events
from pytest_fsperf.plan.marker import build_plan
from pytest_fsperf.result.fuse import FuseRequests
from pytest_fsperf.result.parts import OpStats
from pytest_fsperf.result.workload import WorkloadResult, pick
from pytest_fsperf.vocab import DaemonCache, Outcome, PageCache


def send(t: float, unique: int, op: str, length: int, conn: int = 42) -> str:
    return (f"             ls-1234    [001] ..... {t:.6f}: fuse_request_send: connection {conn} "
            f"req {unique} opcode 1 (FUSE_{op}) len {length}\n")


def end(t: float, unique: int, length: int, error: int = 0, conn: int = 42) -> str:
    return (f"          bindfs-99     [000] ..... {t:.6f}: fuse_request_end: connection {conn} "
            f"req {unique} len {length} error {error}\n")


def trace_text() -> bytes:
    lines = [
        send(9.0, 1, "LOOKUP", 50), end(9.1, 1, 144),  # before the window: not counted
        send(10.0, 2, "LOOKUP", 50), end(10.000020, 2, 144),
        send(10.1, 3, "GETXATTR", 60), end(10.100010, 3, 16, -61),
        send(10.2, 4, "READ", 80), end(10.200100, 4, 16 + 131072),
        send(10.3, 5, "READ", 80), end(10.300300, 5, 16 + 4096),
        send(10.4, 6, "WRITE", 80 + 65536), end(10.400050, 6, 24),
        send(10.5, 7, "READ", 80, conn=43), end(10.5001, 7, 16 + 999, conn=43),  # another mount
        send(11.9, 8, "GETATTR", 56),  # sent in the window, answered after it
        end(12.5, 8, 120),
    ]
    return "".join(lines).encode()


def events() -> Events:
    found = Events(42)
    text = trace_text()
    found.feed(text[:333])  # the drain reads in chunks: a line may be cut in two
    found.feed(text[333:])
    return found


def summary() -> FuseRequests:
    return events().summary(10.0, 12.0, lost=0)


def test_requests_in_the_window_by_opcode() -> None:
    r = summary()
    counts = {op.opcode: op.count for op in r.ops}
    assert counts == {"READ": 2, "LOOKUP": 1, "GETXATTR": 1, "WRITE": 1, "GETATTR": 1}
    assert r.total == 6
    assert r.ops[0].opcode == "READ"  # most requests first


def test_payload_errors_and_service_times() -> None:
    r = summary()
    read, write, xattr, lookup = (r.op(n) for n in ("READ", "WRITE", "GETXATTR", "LOOKUP"))
    assert read is not None and read.bytes == 131072 + 4096
    assert write is not None and write.bytes == 65536
    assert xattr is not None and xattr.errors == {"ENODATA": 1} and xattr.failed == 1
    assert lookup is not None and lookup.p50_us == pytest.approx(20, abs=1)
    assert read.p50_us == pytest.approx(100, abs=1) and read.p99_us == pytest.approx(300, abs=1)
    getattr_ = r.op("GETATTR")
    assert getattr_ is not None and getattr_.unanswered == 1 and getattr_.p50_us is None


def test_per_interval_counts_follow_the_timeline() -> None:
    per = events().per_interval(10.0, 12.0, [11.0, 12.0])
    assert per["READ"] == [2, 0]
    assert per["GETATTR"] == [0, 1]


def test_a_line_split_across_reads_is_not_lost() -> None:
    events = Events(42)
    text = send(10.0, 2, "LOOKUP", 50).encode()
    events.feed(text[:40])
    events.feed(text[40:])
    assert events.summary(9, 11, 0).total == 1


def test_an_end_read_before_its_send_is_paired_and_a_late_end_leaves_it_open() -> None:
    """Drained per CPU, an end may come before its send; a request answered after the
    window is unanswered in it."""
    events = Events(42)
    events.feed((end(10.2, 7, 16 + 4096) + send(10.0, 7, "READ", 80)).encode())
    events.feed((send(10.5, 8, "READ", 80) + end(13.0, 8, 16 + 4096)).encode())
    r = events.summary(9.0, 12.0, 0)
    read = r.op("READ")
    assert read is not None and read.count == 2 and read.unanswered == 1
    assert read.bytes == 4096 and read.p50_us == pytest.approx(200_000, rel=1e-6)


def test_round_trip_through_json() -> None:
    r = summary()
    assert FuseRequests.from_dict(r.to_dict()) == r


def test_unavailable_names_the_missing_tracepoint(tmp_path) -> None:
    (tmp_path / "instances").mkdir()
    (tmp_path / "events" / "fuse" / "fuse_request_end").mkdir(parents=True)
    why = fusetrace.unavailable(str(tmp_path))
    if os.geteuid() != 0:
        assert why == "not root (tracefs is root's)"
    else:
        assert why == "this kernel has no fuse:fuse_request_send tracepoint"
    assert fusetrace.unavailable(str(tmp_path / "nowhere")) in (
        f"tracefs is not mounted at {tmp_path / 'nowhere'}", "not root (tracefs is root's)")


def test_connection_id_is_the_kernels_dev_t() -> None:
    assert fusetrace.connection_id(0, 42) == 42
    assert fusetrace.connection_id(8, 1) == (8 << 20) | 1


def result(fuse: FuseRequests | None, count: int = 4, note: str = "") -> WorkloadResult:
    ops = OpStats("list+stat", count, 0, 1.0, float(count), 0.0, 1, {})
    return WorkloadResult("t.py::test_x", "meta_list_stat", "meta", {}, PageCache.DROPPED,
                          DaemonCache.NO_DAEMON, None, None, None, "", 1.0, 0.0, ops=ops,
                          fuse=fuse, fuse_note=note)


def test_figures_per_file_and_an_unseen_opcode_is_zero() -> None:
    r = result(summary(), count=2)
    m = r.metrics()
    assert m["fuse_requests"] == 6 and m["fuse_per_file"] == 3.0
    assert m["fuse_per_file:READ"] == 1.0
    assert r.figure("fuse_per_file:RMDIR") == 0.0  # traced, never sent
    untraced = result(None)
    assert untraced.figure("fuse_per_file:RMDIR") is None
    assert untraced.metrics()["fuse_per_file"] is None
    assert pick({"fuse_per_file": 2.0}, "fuse_per_file:LOOKUP") == 0.0


def test_per_opcode_threshold_fails_naming_the_opcode() -> None:
    plan = build_plan("t.py::test_x", [((), {"max_fuse_per_file": {"READ": 0.5, "fuse_lookup": 1}})])
    assert [t.part for t in plan.thresholds] == ["READ", "LOOKUP"]
    verdict = judge(plan, [result(summary(), count=2)])
    assert verdict.failures == [
        'meta_list_stat: FUSE_READ requests per file 1 > max_fuse_per_file["READ"] 0.5']
    assert verdict.per_workload["meta_list_stat"] == Outcome.FAIL


def test_a_fuse_threshold_without_a_trace_is_not_judged_and_says_why() -> None:
    plan = build_plan("t.py::test_x", [((), {"max_fuse_per_file": 5})])
    verdict = judge(plan, [result(None, note="not available: not root (tracefs is root's)")])
    assert verdict.failures == []
    assert verdict.per_workload["meta_list_stat"] == Outcome.PARTIAL
    assert verdict.notes == ["meta_list_stat: max_fuse_per_file not judged (not available: "
                             "not root (tracefs is root's))"]


@pytest.mark.parametrize(("limits", "said"), [
    ({"GETATR": 1}, "'GETATR' is not a FUSE opcode (did you mean 'GETATTR'?)"),
    ({}, "an empty mapping bounds nothing"),
    ({"READ": "lots"}, "max_fuse_per_file['READ']"),
])
def test_bad_per_opcode_limits_are_one_line_errors(limits, said) -> None:
    with pytest.raises(UsageError) as err:
        build_plan("t.py::test_x", [((), {"max_fuse_per_file": limits})])
    assert said in str(err.value) and "\n" not in str(err.value)


def traced(ops: dict[str, tuple[int, float]], count: int = 100) -> WorkloadResult:
    """A metadata run whose trace saw {opcode: (requests, p50 us)}."""
    fuse = FuseRequests(42, 1.0, tuple(fusetrace.FuseOp(n, c, {}, 0, p, p) for n, (c, p) in ops.items()))
    return result(fuse, count=count)


def test_where_names_an_opcode_that_went_away_per_file() -> None:
    from pytest_fsperf.judge.where import findings
    a = [traced({"LOOKUP": (100, 20.0), "GETATTR": (100, 15.0)}) for _ in range(3)]
    b = [traced({"LOOKUP": (100, 20.0)}) for _ in range(3)]
    assert findings(a, b) == ("FUSE_GETATTR 0 per file (was 1)",)


def test_where_names_a_slower_service_with_the_same_count_first() -> None:
    from pytest_fsperf.judge.where import findings
    a = [traced({"READ": (8192, 410.0), "LOOKUP": (3, 20.0)}) for _ in range(3)]
    b = [traced({"READ": (8192, 480.0), "LOOKUP": (6, 20.0)}) for _ in range(3)]
    assert findings(a, b) == ("FUSE_READ service time p50 410 us -> 480 us (same count)",
                              "FUSE_LOOKUP 0.06 per file (was 0.03)")


def test_where_names_a_stalled_tail_where_the_median_held() -> None:
    """A daemon throttled by a CPU quota serves most READs as fast, some after a stall."""
    from pytest_fsperf.judge.where import findings

    def run(p50: float, p99: float, count: int = 512) -> WorkloadResult:
        op = fusetrace.FuseOp("READ", count, {}, 0, p50, p99)
        return result(FuseRequests(42, 1.0, (op,)), count=1)

    a = [run(300.0, 900.0) for _ in range(3)]
    assert findings(a, [run(310.0, 8500.0) for _ in range(3)]) == (
        "FUSE_READ service time p99 900 us -> 8.50 ms (same count)",)
    assert findings(a, [run(310.0, 1500.0) for _ in range(3)]) == ()  # within the tail's noise
    assert findings([run(300.0, 900.0, 50)], [run(310.0, 8500.0, 50)]) == ()  # too few


def test_where_says_nothing_of_noise_or_without_a_trace() -> None:
    from pytest_fsperf.judge.where import findings
    a = [traced({"READ": (1000, 100.0)}), traced({"READ": (1000, 104.0)})]
    b = [traced({"READ": (1040, 110.0)}), traced({"READ": (1020, 108.0)})]
    assert findings(a, b) == ()
    assert findings(a, [result(None)]) == ()


def test_the_timeline_draws_fuse_requests_per_second() -> None:
    from dataclasses import replace

    from pytest_fsperf.report.charts import trace
    from pytest_fsperf.report.html import time_chart
    from pytest_fsperf.report.model import TimeChart
    from pytest_fsperf.result.timeline import Timeline
    from tests.results import row as made
    timeline = Timeline(1.0, [0.0, 1.0, 2.5, 3.5], [10**6, 3 * 10**6, 10**6], [None] * 3, [None] * 3,
                        [None] * 3, [None] * 3, [None] * 3,
                        fuse_ops={"READ": [10, 30, 0], "LOOKUP": [0, 0, 4]})
    row = made(timeline=timeline)
    drawn = trace("", row)
    assert drawn is not None and drawn.fuse == (10.0, 20.0, 4.0)
    svg = time_chart(TimeChart("read", (drawn,)))
    assert "FUSE requests/s, all opcodes" in svg
    quiet = replace(row, timeline=replace(timeline, fuse_ops={}))
    assert trace("", quiet).fuse == ()  # type: ignore[union-attr]
