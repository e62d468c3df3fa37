import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_fsperf.engine.fiosize import parse_fio_size, scale_count, scale_size


@pytest.mark.parametrize(
    ("text", "expected"),
    # checked against fio 3.33 with the default kb_base=1024
    [("1k", 1024), ("1kb", 1024), ("1K", 1024), ("2m", 2 * 2**20), ("100G", 100 * 2**30),
     ("1KiB", 1000), ("1kib", 1000), ("1MiB", 10**6), ("4096", 4096)],
)
def test_fio_default_suffixes(text, expected):
    assert parse_fio_size(text) == expected


def test_kb_base_1000_swaps():
    assert parse_fio_size("1k", kb_base=1000) == 1000
    assert parse_fio_size("1KiB", kb_base=1000) == 1024


@pytest.mark.parametrize("bad", ["", "1.5G", "G", "1x", "-1G", "1 G B"])
def test_rejects(bad):
    with pytest.raises(ValueError):
        parse_fio_size(bad)


def test_scale_documented_job():
    assert scale_size("100G", 0.01, block=2**20) == str(1024 * 2**20)


@given(st.integers(1, 10**6), st.sampled_from(["", "k", "m", "g"]), st.floats(0.0001, 0.999),
       st.sampled_from([1, 4096, 2**20]))
def test_scaled_is_whole_blocks_and_not_larger(number, suffix, factor, block):
    text = f"{number}{suffix}"
    scaled = int(scale_size(text, factor, block))
    assert scaled % block == 0 and scaled >= block
    assert scaled <= max(block, parse_fio_size(text) * factor)


def test_scale_one_is_identity_and_percent_passes():
    assert scale_size("100G", 1) == "100G"
    assert scale_size("50%", 0.01) == "50%"
    assert scale_size("1m-4m", 0.5) == f"{2**19}-{2**21}"


def test_scale_count():
    assert scale_count("100000", 0.01) == "1000"
    assert scale_count("3", 0.01) == "1"
