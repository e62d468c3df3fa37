"""The `fsperf` command's arguments: one parser, a function per subcommand."""

from __future__ import annotations

import argparse
import importlib
import re
import textwrap
from typing import Any, NoReturn

from pytest_fsperf.bisect import cli as bisect_cli
from pytest_fsperf.judge import history
from pytest_fsperf.options.table import OPTIONS
from pytest_fsperf.report import comment

SUITES = ("ossfs2", "ossfs1", "fluid", "juicefs_bench", "jobfile")
DEFAULT_SCALE = 0.01
# bench's flags that go straight to a plugin option: bench's name -> the option's ini name
PASSED = {key: f"fsperf_{key}" for key in (
    "backend", "baseline", "rounds", "tolerance", "inconclusive", "save", "compare", "reference",
    "candidate", "mount_options", "backend_config", "save_baseline", "html", "json",
    "markdown")} | {"store": "fsperf_backend_store"}
OPTION = {o.name: o for o in OPTIONS}
USAGE_ERROR = 4  # as pytest's: the command line was wrong
EXIT_CODES = """exit codes (pytest's, for CI):
  0  every test passed: thresholds, baseline gate, comparisons
  1  a test failed: a threshold or gated baseline missed, a regression, or (by default)
     an inconclusive comparison (--inconclusive=warn makes that a warning)
  2  interrupted (Ctrl-C, SIGTERM); mounts and processes were cleaned up
  3  an internal error of pytest or the plugin
  4  a usage error: a flag, file or name was wrong (one line on stderr says which)
  5  no test ran (e.g. -k matched nothing)"""


def _bounded(cast: type[int] | type[float], low: float, high: float, above: bool = False) -> Any:
    """An argparse type: a number written plainly (digits 0-9: float() also takes ٣ and 1_0)
    from low (or above it) to high."""
    pattern = r"[0-9]{1,12}" if cast is int else r"(?:[0-9]{1,12}(?:\.[0-9]{0,12})?|\.[0-9]{1,12})"

    def convert(text: str) -> int | float:
        if not re.fullmatch(pattern, text.strip(), re.ASCII):
            raise argparse.ArgumentTypeError(f"{text[:30]!r} is not a plain "
                                             f"{'whole number' if cast is int else 'number'}")
        value = cast(text.strip())
        if not (low < value if above else low <= value) or value > high:
            raise argparse.ArgumentTypeError(
                f"{text[:30]!r} must be {'above' if above else 'from'} {low:g} "
                f"{'and at most' if above else 'to'} {high:g}")
        return value
    return convert


def _link(text: str) -> str:
    """A CI run's page: one http(s) URL, no space, newline or bracket (a newline in it was
    silently dropped from the comment)."""
    if not re.fullmatch(r"https?://[^\s()<>\[\]]{1,2000}", text):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not one http(s) URL without spaces, "
                                         "new lines or brackets")
    return text


class Parser(argparse.ArgumentParser):
    """argparse that fails with one line and pytest's usage-error code."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def _suite_line(name: str) -> str:
    """The suite's first sentence, wrapped."""
    doc = " ".join((importlib.import_module(f"pytest_fsperf.suites.{name}").__doc__ or "").split())
    first = doc.split(". ")[0].rstrip(".") + "."
    return textwrap.fill(first, 88, initial_indent=f"  {name:<14} ", subsequent_indent=" " * 17)


RECIPES = {"github": "github.yml", "gitlab": "gitlab-ci.yml"}


def _bench(sub: Any) -> None:
    """fsperf bench: a shipped suite (or a job file) on a mount."""
    bench = sub.add_parser(
        "bench", formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="fsperf bench [MOUNT] [options] [-- PYTEST ARGS]",
        help="run a shipped suite of workloads on a mount and print the figures",
        description="Run a shipped suite (fio jobs, small-file and metadata workloads from the "
                    "published benchmarks) on MOUNT, measuring bandwidth, IOPS, latency and the "
                    "FUSE daemon's CPU% and peak memory. Sizes are the documents' (100 GB "
                    "files, 100,000 small files) times --scale. Anything after -- goes to "
                    "pytest unchanged (e.g. -- --fsperf-rounds=3 -v).",
        epilog="suites:\n" + "\n".join(_suite_line(s) for s in SUITES) + "\n\n" + EXIT_CODES
               + "\n\nexample:\n  fsperf bench /mnt/ossfs2 --suite ossfs2 --scale 0.01 "
                 "--baseline ossfs-2.0.4 --html report.html")
    bench.add_argument("mount", nargs="?", metavar="MOUNT",
                       help="an existing mount point to measure (the daemon is found from it); "
                            "leave out with --backend, or for a fresh local directory")
    bench.add_argument("--backend", metavar="NAME",
                       help="mount this backend itself instead (bindfs, rclone, s3fs, ... over a "
                            "local MinIO where it needs one), and unmount it after")
    bench.add_argument("--suite", default="ossfs2", choices=SUITES, metavar="NAME",
                       help="which suite (default ossfs2; listed below)")
    bench.add_argument("--scale", type=_bounded(float, 0, 1e12), metavar="FACTOR",
                       help=f"multiply every size and file count (default {DEFAULT_SCALE}: "
                            "1 GiB instead of 100 GiB; 1 with --fio)")
    for key in ("store", "mount_options", "backend_config", "save_baseline", "candidate"):
        option = OPTION[PASSED[key]]  # said as the plugin's option says it
        bench.add_argument("--" + key.replace("_", "-"), metavar=option.metavar,
                           help=option.help.replace("%", "%%"))
    bench.add_argument("--fio", metavar="FILE",
                       help="run your fio job file instead of a suite: each section a workload")
    bench.add_argument("--baseline", metavar="NAME",
                       help="show measured / documented per scenario (see `fsperf baselines`)")
    bench.add_argument("--gate", action="store_true",
                       help="with --baseline and --scale 1 (the documents' size): a figure "
                            "worse than documented beyond the tolerance fails; at another "
                            "scale the comparison is shown, not judged")
    bench.add_argument("--rounds", type=_bounded(int, 1, 1000), metavar="N", help="run each workload N times")
    bench.add_argument("--tolerance", metavar="PERCENT", help="default 10%%")
    bench.add_argument("--inconclusive", choices=("fail", "warn"),
                       help="whether an undecided comparison fails the test (default fail)")
    bench.add_argument("--save", metavar="NAME", help="save this run (.fsperf/runs/NAME.json)")
    bench.add_argument("--compare", metavar="NAME",
                       help="compare with a saved run ('latest': the newest that matches)")
    bench.add_argument("--reference", metavar="BINARY",
                       help="with --backend: gate the backend's binary on PATH against this "
                            "reference build, interleaved")
    bench.add_argument("--html", metavar="PATH", help="write the HTML report")
    bench.add_argument("--json", metavar="PATH", help="write every figure as JSON")
    bench.add_argument("--markdown", metavar="PATH", help="write the Markdown report")
    bench.add_argument("-k", metavar="EXPR", dest="keyword",
                       help="only scenarios matching EXPR (pytest -k), e.g. 'seq_read'")
    bench.add_argument("--user-config", action="store_true",
                       help="also read the pytest.ini / pyproject.toml and conftest.py files of "
                            "the current directory (default: the suite runs with none of them)")
    bench.add_argument("--ceilings", action="store_true",
                       help="measure nothing but this machine's ceilings for the suite's fio "
                            "workloads: tmpfs, one FUSE daemon (bindfs over tmpfs) and the "
                            "object store (a local MinIO) read or written straight")


def _compare_runs(sub: Any) -> None:
    """fsperf compare-runs: one saved run against another."""
    cmp = sub.add_parser("compare-runs", help="judge saved run NEW against saved run BASE",
                         formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_CODES,
                         description="Every workload of NEW against the same workload of BASE "
                                     "(same fingerprint: workload, scale, filesystem, mount "
                                     "options, kernel, machine): median ratio, 95% interval, "
                                     "outcome, as --fsperf-compare judges.")
    cmp.add_argument("base", metavar="BASE", help="a saved run's name, or a path to its .json")
    cmp.add_argument("new", metavar="NEW", help="likewise")
    cmp.add_argument("--storage", metavar="DIR", default=".fsperf/runs",
                     help="where the runs are saved (default .fsperf/runs)")
    cmp.add_argument("--tolerance", metavar="PERCENT", default="10%", help="default 10%%")
    cmp.add_argument("--inconclusive", choices=("fail", "warn"), default="fail",
                     help="whether an undecided comparison fails (exit 1; default)")


def _history(sub: Any) -> None:
    """fsperf history: change points over saved runs."""
    hist = sub.add_parser(
        "history", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="change points over saved runs: when a figure moved, by how much, from which build",
        description="Reads saved runs (the plugin's JSON files: --fsperf-save, --fsperf-autosave, "
                    "--fsperf-json, CI artifacts), makes each workload's figures a series over "
                    "them (one per fingerprint: workload, scale, filesystem, mount options, "
                    "kernel, machine), and finds the change points in each with Apache Otava's "
                    "E-Divisive means (pip install 'pytest-fsperf[history]'). A change point that "
                    "falls on one of the machine canary's (one run either way) is the machine's.",
        epilog="exit codes: 0 shown; 1 with --gate, a worsening started in the newest runs; "
               "4 a usage error")
    hist.add_argument("runs", nargs="*", metavar="RUNS",
                      help="files, folders or globs of saved runs (default: the storage dir)")
    hist.add_argument("--storage", metavar="DIR", default=".fsperf/runs",
                      help="where the runs are saved (default .fsperf/runs)")
    hist.add_argument("--figure", default=",".join(history.FOLLOWED), metavar="LIST",
                      help=f"figures to follow (default {','.join(history.FOLLOWED)})")
    hist.add_argument("--max-pvalue", type=_bounded(float, 0, 1e12), default=history.MAX_PVALUE, metavar="P",
                      help=f"a change point's significance (default {history.MAX_PVALUE:g})")
    hist.add_argument("--min-change", default=f"{100 * history.MIN_CHANGE:g}%", metavar="PERCENT",
                      help="ignore level shifts smaller than this (default %(default)s)")
    hist.add_argument("--window", type=_bounded(int, 0, 100_000), default=history.WINDOW, metavar="N",
                      help=f"runs per window of Otava's split step (default {history.WINDOW})")
    hist.add_argument("--normalise", action="store_true",
                      help="also divide each run's figure by its machine canary (relative to the "
                           "series' median) and show which change points that adds or removes")
    hist.add_argument("--html", metavar="PATH", help="write the trend page")
    hist.add_argument("--gate", action="store_true",
                      help="exit 1 when a series' newest runs start a level worse by more than "
                           "--tolerance (not the machine's)")
    hist.add_argument("--tolerance", default="10%", metavar="PERCENT", help="default 10%%")
    hist.add_argument("--recent", type=_bounded(int, 0, 100_000), default=5, metavar="N",
                      help="with --gate: a change point counts when it began within the newest N "
                           "runs (default 5)")


def _others(sub: Any) -> None:
    """fsperf baselines, comment and ci."""
    base = sub.add_parser("baselines", help="list the documented baselines shipped, or one's figures")
    base.add_argument("name", nargs="?", metavar="NAME", help="show this baseline's figures")
    note = sub.add_parser(
        "comment", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="a pull request's comment from a session's JSON; exits with its decision",
        description="Prints one Markdown comment from RESULTS (--fsperf-json's file): the "
                    "decision first, a line per compared workload (B/A, interval, outcome, "
                    "pairs, time, where B's time went when it is worse), what else failed, the "
                    "cost, a link; at most --limit characters whatever the number of workloads. "
                    "Its first line is a marker a CI step finds to update the comment in place.",
        epilog="exit codes (the decision, for CI):\n" + "\n".join(comment.describe_codes()))
    note.add_argument("results", metavar="RESULTS", help="the session's JSON (--fsperf-json)")
    note.add_argument("--inconclusive", choices=("fail", "warn"), default="fail",
                      help="whether an undecided gate fails (exit 8; default) or passes, said")
    note.add_argument("--machine-changed", choices=("fail", "warn"),
                      help="whether a changed machine fails (exit 9; default: as --inconclusive)")
    note.add_argument("--link", type=_link, metavar="URL", help="where the artifacts are (the CI run's page)")
    note.add_argument("--limit", type=_bounded(int, 500, 1_000_000), default=comment.LIMIT, metavar="CHARS",
                      help="the most characters (default %(default)s, GitHub's limit)")
    ci = sub.add_parser("ci", help="print a CI recipe: the release gate on each pull request, "
                                   "its comment, and main's history",
                        description="Prints a GitHub Actions workflow or a GitLab CI job to copy "
                                    "into a filesystem's repository (docs/how-to/ci.md).")
    ci.add_argument("kind", choices=tuple(RECIPES), help="which CI")


def parser() -> Parser:
    top = Parser(prog="fsperf", formatter_class=argparse.RawDescriptionHelpFormatter,
                 description="Filesystem performance checks for FUSE mounts over object "
                             "storage, as pytest tests.", epilog=EXIT_CODES)
    sub = top.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add in (_bench, _compare_runs, _history, _others):
        add(sub)
    bisect_cli.add(sub)
    return top
