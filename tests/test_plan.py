import pytest

from pytest_fsperf.errors import UsageError
from pytest_fsperf.plan.marker import build_plan


def plan(**kw):
    return build_plan("t.py::test_x", [((), kw)])


def test_thresholds_parsed():
    p = plan(min_bw="2GB/s", max_cpu="250%", max_rss="2.2GB", max_p99="20ms", min_iops=1000)
    limits = {t.keyword: t.limit for t in p.thresholds}
    assert limits == {"min_bw": 2e9, "max_cpu": 250, "max_rss": 2.2e9, "max_p99": 2e7,
                      "min_iops": 1000}


def test_closest_marker_wins():
    p = build_plan("t", [((), {"min_bw": "2GB/s"}), ((), {"min_bw": "1MB/s", "max_cpu": "5%"})])
    assert {t.keyword: t.text for t in p.thresholds} == {"min_bw": "2GB/s", "max_cpu": "5%"}


@pytest.mark.parametrize(
    ("kw", "needle"),
    [({"min_bandwidth": "1GB/s"}, "unknown keyword 'min_bandwidth'"),
     ({"min_bw": "2gb/s"}, "min_bw: '2gb/s' has unknown unit 'gb'"),
     ({"max_cpu": "250"}, "max_cpu: '250' must be a percentage"),
     ({"max_rss": 2.2e9}, "max_rss: 2200000000.0 needs a unit"),
     ({"max_p99": "20 minutes"}, "max_p99")],
)
def test_errors_name_test_and_keyword(kw, needle):
    with pytest.raises(UsageError) as exc:
        plan(**kw)
    assert str(exc.value).startswith("t.py::test_x: fsperf marker")
    assert needle in str(exc.value)
    assert "\n" not in str(exc.value)


def test_positional_argument_rejected():
    with pytest.raises(UsageError, match="keywords only"):
        build_plan("t", [(("2GB/s",), {})])


def test_failure_message_shape():
    (t,) = plan(min_bw="2GB/s").thresholds
    assert not t.holds(812e6)
    assert t.describe_failure("seq_read", 812e6) == "seq_read: bandwidth 812 MB/s < min_bw 2GB/s"


def test_an_unknown_marker_keyword_gets_a_did_you_mean():
    from pytest_fsperf.plan.marker import build_plan
    with pytest.raises(UsageError, match=r"unknown keyword 'min_bandwidth' \(did you mean 'min_bw'\? known: "):
        build_plan("t::x", [((), {"min_bandwidth": "1GB/s"})])


def test_a_tolerance_without_percent_is_not_answered_with_cores():
    from pytest_fsperf.plan.marker import build_plan
    with pytest.raises(UsageError) as caught:
        build_plan("t::x", [((), {"tolerance": "10"})])
    assert "'10' must be a percentage such as '10%'" in str(caught.value)
    assert "core" not in str(caught.value)
