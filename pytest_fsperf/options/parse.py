"""Each setting's value read from its text, with where it came from: one parser per kind."""

from __future__ import annotations

import enum
import math
import os
import re
import shlex
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from pytest_fsperf import units
from pytest_fsperf.engine import fio_clients, jobfile
from pytest_fsperf.errors import UsageError
from pytest_fsperf.hosts import spec as hosts_spec
from pytest_fsperf.infra import inputs, outfile, trust
from pytest_fsperf.infra.mountinfo import find_mount, read_mounts
from pytest_fsperf.infra.probe import MISSING, NOT_DIR, READ_ONLY, NoAnswer, probe
from pytest_fsperf.measure import fusetrace
from pytest_fsperf.mounts.registry import BackendConfig, load_config
from pytest_fsperf.plan.marker import figure_names
from pytest_fsperf.store import cost
from pytest_fsperf.vocab import Text

if TYPE_CHECKING:  # the settings are read from pytest's config; the core needs no pytest
    pass

T = TypeVar("T")


class Source(Text):
    """Where a setting's value came from, strongest first."""

    COMMAND_LINE = "command line"
    MARKER = "marker"
    INI = "ini file"
    DEFAULT = "default"

    @property
    def rank(self) -> int:
        return list(Source).index(self)


RULE = "command line > marker > ini file > default"


@dataclass(frozen=True)
class Chosen(Generic[T]):
    """A setting's value, where it came from, and what it overrode."""

    value: T
    source: Source
    where: str = ""  # e.g. "--fsperf-rounds=5 (command line)"
    over: tuple[str, ...] = ()  # the weaker values it beat

    def describe(self, name: str) -> str:
        text = f"{name}={self.value!s} from {self.where or 'the default'}"
        return text + "".join(f"; over {o}" for o in self.over)


def choose(*candidates: Chosen[T] | None) -> Chosen[T]:
    """The one precedence rule: the strongest source wins; the others are noted as overridden."""
    given = sorted((c for c in candidates if c is not None), key=lambda c: c.source.rank)
    best = given[0]
    beaten = tuple(c.where for c in given[1:] if c.source != Source.DEFAULT and c.value != best.value)
    beaten += tuple(o for c in given for o in c.over)
    return Chosen(best.value, best.source, best.where, beaten)


@dataclass(frozen=True)
class Raw:
    text: str
    where: str
    base: Path  # relative paths resolve against this
    source: Source = Source.COMMAND_LINE
    over: str = ""  # the weaker value it beat (an ini key under a flag)

    @property
    def path(self) -> Path:
        path = Path(os.path.expanduser(self.text))
        return path if path.is_absolute() else self.base / path


def mount(raw: Raw, timeout: float, plain_dir: bool = False) -> Path:
    """Checked from a helper process: a mount whose daemon never answers must not hang pytest.
    A directory that is not itself a mount point is refused (a CI job whose mount step failed
    would gate the runner's own disk) unless plain_dir (--fsperf-plain-dir=1) says it is meant."""
    try:
        state, real = probe(str(raw.path), timeout)
    except NoAnswer as exc:
        raise UsageError(f"{raw.where}: {exc}") from None
    problem = {MISSING: "no such directory", NOT_DIR: "not a directory",
               READ_ONLY: "not writable (read-only mount or no permission)"}.get(state)
    if problem:
        raise UsageError(f"{raw.where}: {problem}")
    try:
        under = find_mount(real, read_mounts())
    except (OSError, LookupError):
        under = None
    if not plain_dir and under is not None and under.mount_point != real:
        raise UsageError(f"{raw.where}: {real} is not a mount point but a directory on "
                         f"{under.fstype} mounted at {under.mount_point} (did the mount step "
                         "fail?); give the mounted directory, or --fsperf-plain-dir=1 to "
                         "measure a directory that is not one")
    why = trust.untrusted(real, exists=False)
    if why:  # they could move the mount aside and put a directory or link of theirs there
        raise UsageError(f"{raw.where}: {why}; the tests' work would go where they chose")
    return Path(real)


INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
DECIMAL = re.compile(r"[+-]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,3})?")


def number(raw: Raw, cast: Callable[[str], T], what: str) -> T:
    """raw as a number written plainly (Python's int() also takes 1_0, Arabic-Indic digits and
    thousands of them), or a usage error saying what it should have been."""
    text = raw.text.strip()
    if not (INTEGER if cast is int else DECIMAL).fullmatch(text):
        raise UsageError(f"{raw.where}: not {what}")
    try:
        return cast(text)
    except ValueError:
        raise UsageError(f"{raw.where}: not {what}") from None


def pid(raw: Raw) -> int:
    pid = number(raw, int, "a process ID")
    if pid <= 0 or not os.path.exists(f"/proc/{pid}"):
        raise UsageError(f"{raw.where}: no such process")
    return pid


def positive(raw: Raw) -> float:
    value = number(raw, float, "a number")
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{raw.where}: must be a positive number")
    return value


MAX_SCALE = 100.0  # above 1 for a machine bigger than the document's; not past this


def scale(raw: Raw) -> float:
    value = positive(raw)
    if value > MAX_SCALE:
        raise UsageError(f"{raw.where}: must be above 0 and at most {MAX_SCALE:g} (above 1 for "
                         "a machine bigger than the document's)")
    return value


def out_file(raw: Raw) -> Path:
    path = raw.path
    if path.is_dir():
        raise UsageError(f"{raw.where}: is a directory; give a file name")
    if not path.parent.is_dir():
        raise UsageError(f"{raw.where}: directory {path.parent} does not exist")
    try:
        outfile.check(path)
    except outfile.OutputError as exc:
        raise UsageError(f"{raw.where}: {exc}") from None
    return path


def words(raw: Raw) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(raw.text))
    except ValueError as exc:
        raise UsageError(f"{raw.where}: {exc}") from None


def backend_config(raw: Raw) -> BackendConfig:
    """Backends it defines are commands root runs: it is read only where no other user can
    change it or a directory above it."""
    # resolved once: what is checked is what is read
    real, why = trust.resolved(str(raw.path), exists=os.path.lexists(raw.path))
    if why:
        raise UsageError(f"{raw.where}: {why}; its backends would run as you")
    return load_config(real, raw.where)


def session_seconds(raw: Raw) -> float:
    value = positive(raw)
    if value > 86400:
        raise UsageError(f"{raw.where}: at most 86400 seconds (a day)")
    return value


def timeout(raw: Raw) -> float:
    value = positive(raw)
    if value > 3600:
        raise UsageError(f"{raw.where}: at most 3600 seconds")
    return value


def _matching(raw: Raw, pattern: str, what: str) -> str:
    text = raw.text.strip()
    if not re.fullmatch(pattern, text):
        raise UsageError(f"{raw.where}: {what}")
    return text


def name(raw: Raw) -> str:
    return _matching(raw, r"[A-Za-z0-9][A-Za-z0-9_.+-]*", "a name of letters, digits, '.', '_', '+', '-'")


def rounds(raw: Raw) -> int:
    n = number(raw, int, "a whole number")
    if not 1 <= n <= 1000:
        raise UsageError(f"{raw.where}: must be from 1 to 1000")
    return n


def flag(raw: Raw) -> bool:
    text = raw.text.strip().lower()
    if text not in ("0", "1", "true", "false", "yes", "no"):
        raise UsageError(f"{raw.where}: must be 1 or 0")
    return text in ("1", "true", "yes")


def choice(*allowed: str) -> Callable[[Raw], str]:
    def convert(raw: Raw) -> str:
        if raw.text.strip() not in allowed:
            raise UsageError(f"{raw.where}: must be " + " or ".join(f"'{a}'" for a in allowed))
        return raw.text.strip()

    return convert


E = TypeVar("E", bound=enum.Enum)


def member(kind: type[E]) -> Callable[[Raw], E]:
    """A setting whose value is one of an enum's values, checked as choice does."""
    return lambda raw: kind(choice(*(str(m.value) for m in kind))(raw))


def storage(raw: Raw) -> Path:
    if not raw.text.strip():
        raise UsageError(f"{raw.where}: empty; give the folder of saved runs")
    path = raw.path
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return path
    except OSError as exc:  # a link loop, a component that is a file
        raise UsageError(f"{raw.where}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{raw.where}: not a directory")
    return path


def compare(raw: Raw) -> str:
    return "latest" if raw.text.strip() == "latest" else name(raw)


def executable(raw: Raw) -> str:
    """A build root will run: it and every directory above it closed to other users."""
    real, why = trust.resolved(str(raw.path))  # resolved once: what is checked runs
    if not os.path.isfile(real) or not os.access(real, os.X_OK):
        raise UsageError(f"{raw.where}: not an executable file")
    if why:
        raise UsageError(f"{raw.where}: {why}; it would run as you")
    return real


def tolerance(raw: Raw) -> float:
    try:
        value = units.parse_tolerance(raw.text)
    except ValueError as exc:
        raise UsageError(f"{raw.where}: {exc}") from None
    if not 0 <= value < 1:
        raise UsageError(f"{raw.where}: must be from 0% to below 100%")
    return value


def job_file(raw: Raw) -> Path:
    jobfile.read(raw.path, raw.where)  # one line for what fio would not read or we not run
    return raw.path


def prices_file(raw: Raw) -> Path:
    try:
        cost.load(raw.path)
    except cost.PriceError as exc:
        raise UsageError(f"{raw.where}: {exc}") from None
    return raw.path


def pairs(raw: Raw) -> int:
    n = rounds(raw)
    if not 3 <= n <= 1000:
        raise UsageError(f"{raw.where}: must be from 3 to 1000")
    return n




def gate_on(raw: Raw) -> tuple[str, ...]:
    return figure_names(raw.text, raw.where)


def tracing(raw: Raw) -> fusetrace.Tracing:
    chosen = fusetrace.Tracing(choice(*(t.value for t in fusetrace.Tracing))(raw))
    why = fusetrace.unavailable() if chosen == fusetrace.Tracing.ON else None
    if why:
        raise UsageError(f"{raw.where}: the kernel's FUSE tracepoints cannot be used: {why}")
    return chosen




def servers(raw: Raw) -> tuple[fio_clients.Server, ...]:
    try:
        return fio_clients.parse_servers(raw.text)
    except ValueError as exc:
        raise UsageError(f"{raw.where}: {exc}") from None


def hosts(raw: Raw) -> tuple[hosts_spec.Host, ...]:
    """A list, or @FILE: a hosts file, one [USER@]HOST[:PORT]:/MOUNT per line (# comments)."""
    try:
        return hosts_spec.parse_hosts(_listed(raw, "hosts"))
    except ValueError as exc:
        raise UsageError(f"{raw.where}: {exc}") from None


def pods(raw: Raw) -> tuple[hosts_spec.Pod, ...]:
    """A list, or @FILE: one [NAMESPACE/]POD[/CONTAINER]:/MOUNT per line (# comments)."""
    try:
        return hosts_spec.parse_pods(_listed(raw, "pods"))
    except ValueError as exc:
        raise UsageError(f"{raw.where}: {exc}") from None


def _listed(raw: Raw, what: str) -> str:
    """The list as given, or an @FILE's lines joined by commas (# comments dropped); a FIFO,
    a device or a huge file is refused, never waited on."""
    text = raw.text.strip()
    if not text.startswith("@"):
        return text
    path = Raw(text[1:], raw.where, raw.base).path
    try:
        lines = inputs.read_text(path, 1 << 20).splitlines()
    except inputs.InputError as exc:
        raise UsageError(f"{raw.where}: the {what} file {path} {exc}") from None
    return ",".join(ln.split("#", 1)[0].strip() for ln in lines)


def kubeconfig(raw: Raw) -> Path:
    """kubectl runs the commands a kubeconfig names (users[].user.exec): as root, a file
    another user can change is their command as root."""
    return _obeyed(raw, "kubectl")


def meter_pod(raw: Raw) -> str:
    """The measuring pod's template: a Pod with a container and its image, as JSON text."""
    import json

    path = raw.path
    try:
        text = inputs.read_text(path, 1 << 20)
    except inputs.InputError as exc:
        raise UsageError(f"{raw.where}: the pod template {path} {exc}") from None
    try:
        found = json.loads(text)
    except ValueError:
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError:
            raise UsageError(f"{raw.where}: {path} is not JSON; YAML needs PyYAML (pip install "
                             "'pytest-fsperf[k8s]')") from None
        try:
            found = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UsageError(f"{raw.where}: {path} is neither JSON nor YAML: "
                             f"{str(exc).splitlines()[0]}") from None
    spec = found.get("spec") if isinstance(found, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if (not isinstance(found, dict) or found.get("kind") != "Pod" or not isinstance(containers, list)
            or not containers or not isinstance(containers[0], dict)
            or not isinstance(containers[0].get("image"), str)):
        raise UsageError(f"{raw.where}: {path} is not a Pod with a container and its image")
    return json.dumps(found)


def ssh_config(raw: Raw) -> Path:
    """ssh runs what the file says (ProxyCommand, LocalCommand) as this user: as root, a
    file another user can change, or replace in its directory, is their command as root."""
    return _obeyed(raw, "ssh")


def _obeyed(raw: Raw, program: str) -> Path:
    """A config file `program` obeys (it may name commands): root's or yours with every
    directory above it, its real path one word for execnet."""
    path = raw.path
    if not path.is_file():
        raise UsageError(f"{raw.where}: {path} is not a file")
    real = path.resolve()
    why = trust.untrusted(str(real))
    if why:
        raise UsageError(f"{raw.where}: {why}; {program} would run its commands as you")
    if any(c.isspace() for c in str(real)) or "//" in str(real):
        raise UsageError(f"{raw.where}: {real} holds whitespace or '//' (execnet splits on them)")
    return real


def host_python(raw: Raw) -> str:
    try:
        return hosts_spec.check_python(raw.text.strip())
    except ValueError as exc:
        raise UsageError(f"{raw.where}: {exc}") from None


def build_id(raw: Raw) -> str:
    return _matching(raw, r"[A-Za-z0-9][A-Za-z0-9_.+:/@-]{0,127}",
                     "up to 128 letters, digits and . _ + : / @ -")


def text(raw: Raw) -> str:
    return raw.text.strip()
