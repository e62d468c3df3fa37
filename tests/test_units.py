import contextlib
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_fsperf import units

finite = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2GB/s", 2e9), ("2.2GB", 2.2e9), ("812 MB/s", 812e6), ("1KiB", 1024), ("1kB", 1000),
     ("1KB", 1000), ("3TiB/s", 3 * 2**40), ("10B", 10), (".5GB", 5e8)],
)
def test_parse_bytes_examples(text, expected):
    assert units.parse_bytes(text, rate=True) == pytest.approx(expected)


@given(finite, st.sampled_from(sorted(units.BYTE_UNITS)), st.booleans())
def test_bytes_round_trip(number, unit, per_second):
    text = f"{number!r}{unit}{'/s' if per_second else ''}"
    assert units.parse_bytes(text, rate=True) == pytest.approx(number * units.BYTE_UNITS[unit])


@given(finite, st.sampled_from(["ns", "us", "ms", "s"]))
def test_duration_round_trip(number, unit):
    assert units.parse_duration_ns(f"{number!r}{unit}") == pytest.approx(
        number * units.TIME_UNITS[unit])


@given(finite)
def test_percent_round_trip(number):
    assert units.parse_percent(f"{number!r}%") == pytest.approx(number)


@pytest.mark.parametrize(
    "bad", ["2gb/s", "2 GBps", "GB", "", "2", "2e", "-2GB", "nanGB", "2 G B", "2Gb", 2e9, None,
            True, "2GB/s/s", "inf GB"],
)
def test_parse_bytes_rejects(bad):
    with pytest.raises(ValueError):
        units.parse_bytes(bad, rate=True)


def test_bytes_without_rate_rejects_per_second():
    with pytest.raises(ValueError):
        units.parse_bytes("2GB/s")


@pytest.mark.parametrize("bad", ["250", 250, "250 %%", "%", "2.5x", "-5%"])
def test_parse_percent_rejects(bad):
    with pytest.raises(ValueError):
        units.parse_percent(bad)


@pytest.mark.parametrize("bad", ["20", 20, "20 m", "20min", "ms", "20 mss"])
def test_parse_duration_rejects(bad):
    with pytest.raises(ValueError):
        units.parse_duration_ns(bad)


@given(st.text(max_size=12))
def test_parsers_raise_only_value_error(text):
    for parse in (units.parse_percent, units.parse_duration_ns, units.parse_rate_count):
        try:
            value = parse(text)
        except ValueError:
            continue
        assert math.isfinite(value) and value >= 0
    with contextlib.suppress(ValueError):
        assert units.parse_bytes(text, rate=True) >= 0


@pytest.mark.parametrize("value", [5000, 5000.5, "5000", "5000/s"])
def test_rate_count(value):
    assert units.parse_rate_count(value) == float(str(value).removesuffix("/s"))


@pytest.mark.parametrize("bad", [-1, float("nan"), "5k", "5 files", True, [5]])
def test_rate_count_rejects(bad):
    with pytest.raises(ValueError):
        units.parse_rate_count(bad)


@pytest.mark.parametrize(
    ("value", "text"),
    [(2.2e9, "2.20 GB/s"), (812.4e6, "812 MB/s"), (45.26e6, "45.3 MB/s"), (7.4e9, "7.40 GB/s")],
)
def test_format_rate(value, text):
    assert units.format_rate(value) == text


@given(st.floats(min_value=1e6, max_value=1e13))
def test_format_rate_reparses_within_a_percent(value):
    assert units.parse_bytes(units.format_rate(value).replace(" ", ""), rate=True) == (
        pytest.approx(value, rel=0.01))


def test_format_memory_and_cpu():
    assert units.format_mb(2167e6) == "2167 MB"
    assert units.format_percent(206.6) == "207%"
    assert units.format_duration(20e6) == "20.0 ms"


@pytest.mark.fio
def test_the_measuring_core_imports_no_pytest():
    """Benchmarks drive the core directly: importing it must not import pytest."""
    import subprocess
    import sys

    code = ("import sys\n"
            "import pytest_fsperf.fixture, pytest_fsperf.runner.ab, pytest_fsperf.session.state, "
            "pytest_fsperf.mounts.mounter, pytest_fsperf.store.minio, pytest_fsperf.infra.leftovers\n"
            "assert 'pytest' not in sys.modules, [m for m in sys.modules if 'pytest' in m]\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
