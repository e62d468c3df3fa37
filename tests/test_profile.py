"""The daemon's profile: perf script's text folded into stacks, two profiles compared (logic;
tests/test_fuse_requests.py profiles a real bindfs A/B)."""

from __future__ import annotations

from pytest_fsperf.measure.profile import diff, fold


def sample(comm: str, *frames: tuple[str, str]) -> str:
    """frames leaf first: (symbol, dso)."""
    body = "".join(f"\t{0xffff0000 + i:x} {sym}+0x1c ({dso})\n" for i, (sym, dso) in enumerate(frames))
    return f"{comm} \n{body}\n"


KERNEL = "[kernel.kallsyms]"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"


def script(copy: int, lookup: int, unknown: int = 0) -> str:
    return (sample("bindfs", ("fuse_copy_fill", KERNEL), ("fuse_dev_write", KERNEL),
                   ("__GI___writev", LIBC)) * copy
            + sample("bindfs", ("ext4_lookup", KERNEL), ("__lxstat64", LIBC)) * lookup
            + sample("bindfs", ("[unknown]", "/usr/bin/bindfs"), ("main", "/usr/bin/bindfs")) * unknown)


def test_fold_counts_stacks_outer_first_and_the_kernels_share() -> None:
    p = fold(script(3, 1, 0))
    assert p.samples == 4
    assert p.folded[0] == ("bindfs;__GI___writev;fuse_dev_write;fuse_copy_fill", 3)
    assert p.self_share == {"fuse_copy_fill": 0.75, "ext4_lookup": 0.25}
    assert p.kernel == 1.0 and p.stripped == 0.0
    assert p.folded_text().splitlines()[1] == "bindfs;__lxstat64;ext4_lookup 1"


def test_a_leaf_without_a_symbol_is_named_by_its_binary_and_counted_as_stripped() -> None:
    p = fold(script(1, 0, 3))
    assert p.self_share["[bindfs]"] == 0.75
    assert p.stripped == 1.0 and p.kernel == 0.25


def test_diff_names_the_functions_whose_share_moved_most() -> None:
    a, b = fold(script(50, 50)), fold(script(80, 20))
    assert diff(a, b) == ("daemon samples: fuse_copy_fill 50% -> 80%", "ext4_lookup 50% -> 20%")
    assert diff(a, fold(script(50, 50))) == ()
    assert diff(a, fold("")) == ()


def test_a_profile_of_a_few_samples_is_not_compared() -> None:
    said = diff(fold(script(1, 1)), fold(script(80, 20)))
    assert said == ("too few samples to compare (2 of A's daemon, 100 of B's, at 499 Hz; under 50 "
                    "on a side, shares say little): a longer workload gives more",)


def test_diff_says_when_the_daemon_has_no_symbols() -> None:
    said = diff(fold(script(10, 0, 90)), fold(script(10, 0, 90)))
    assert said == ("100% of the daemon's user-space samples have no symbol (a stripped binary)",)


def test_the_differential_flame_graph_is_bs_shape_coloured_by_the_change() -> None:
    import re

    from pytest_fsperf.report.flame import svg
    a = [("bindfs;main;read;fuse_copy", 5), ("bindfs;main;stat", 5)]
    b = [("bindfs;main;read;fuse_copy", 8), ("bindfs;main;stat", 2)]
    out = svg(a, b, "profile")
    frames = {m[0]: (float(m[1]), m[2]) for m in re.findall(
        r"<title>(\w+): [^<]*</title><rect [^>]*width=\"([\d.]+)\"[^>]*fill=\"([^\"]+)\"", out)}
    assert frames["read"][0] == 960 * 0.8 and frames["stat"][0] == 960 * 0.2  # B's shape
    assert frames["read"][1] == "rgb(255,0,0)"  # 50% -> 80%: red, full
    assert frames["stat"][1] == "rgb(0,0,255)"  # 50% -> 20%: blue, full
    assert frames["main"][1] == "rgb(255,255,255)"  # 100% on both sides
    assert svg(a, [], "profile") == ""
