"""Config comparison runs: a YAML file of named axes becomes one validated run configuration per point.

Teams ask "what does `acks=1` cost us compared with `acks=all`, on 4.1 and on 4.3?"; the answer is the
same faults run against each configuration, one after another, and compared. Every point is validated
before the first cluster starts (a typo in the fifth configuration must not cost four runs), and each
point's run directory is named after its axis values, so a matrix interrupted halfway resumes where it
stopped and two points can never share a directory.

```yaml
name: example              # optional; default: the file's stem
base:                      # settings every run shares: any `kchaos run` option, with underscores
  duration: 30
axes:                      # every combination of these values runs
  acks: ["all", "1"]
  unclean_leader_election: [false, true]
exclude:                   # optional: combinations to leave out
  - {acks: "1", idempotence: true}
repetitions: 2             # optional; each point runs this often, with its own run directory
```
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kchaos.model.config import ConfigError, RunConfig, load_config
from kchaos.model.package_data import package_dir

#: Fields a matrix may not set: where its runs go and what they are called are the matrix's business.
RESERVED = ("run_id", "runs_dir")
#: The file's keys and what each holds, in the words `kchaos matrix --help` shows.
KEY_HELP = {
    "name": "optional; the runs go to RUNS_DIR/<name>/ (default: the file's stem)",
    "description": "optional; one line saying what the matrix compares",
    "base": "optional; settings all runs share (`kchaos run` options, underscores), e.g. {duration: 30}",
    "axes": "required; the settings to vary, each with a list of values, e.g. {acks: [all, '1']}",
    "exclude": "optional; combinations to leave out, e.g. [{acks: '1', idempotence: true}]",
    "repetitions": "optional; how often each combination runs, 1 to 100 (default 1)",
}
#: The file's keys.
KEYS = tuple(KEY_HELP)

#: Short names for run directory names (a directory name must stay readable in a listing).
_SHORT = {
    "kafka_version": "kafka",
    "kafka_image": "image",
    "min_insync_replicas": "minisr",
    "replication_factor": "rf",
    "unclean_leader_election": "unclean",
    "idempotence": "idem",
}
_MAX_ID = 90


class MatrixError(ValueError):
    """The matrix file is invalid; the message names the file, the key and the fix."""


@dataclass(frozen=True)
class MatrixPoint:
    """One configuration of the matrix, in one repetition.

    `settings` are the axis values that make it what it is (what a comparison table shows); `key` names
    the configuration without the repetition, so repetitions of one configuration are compared as one.
    """

    settings: dict[str, Any]
    repetition: int
    config: RunConfig

    @property
    def run_id(self) -> str:
        return self.config.run_id

    @property
    def key(self) -> str:
        return configuration_key(self.settings)


@dataclass(frozen=True)
class Matrix:
    name: str
    base: dict[str, Any]
    axes: dict[str, list[Any]]
    exclude: list[dict[str, Any]]
    repetitions: int
    description: str = ""

    def with_axes(self, overrides: Mapping[str, list[Any]]) -> Matrix:
        """The matrix with some axes replaced (`--axis kafka_version=4.1.1`), e.g. one CI cell per version."""
        for name in overrides:
            _check_field(name, "--axis")
        return Matrix(
            self.name, self.base, {**self.axes, **overrides}, self.exclude, self.repetitions, self.description
        )

    def with_base(self, settings: Mapping[str, Any]) -> Matrix:
        """The matrix with some base settings added or replaced (`--spark-remote` for every run)."""
        for name in settings:
            _check_field(name, "the base")
        return Matrix(
            self.name, {**self.base, **settings}, self.axes, self.exclude, self.repetitions, self.description
        )

    def points(self, runs_dir: Path) -> list[MatrixPoint]:
        """Every point in a fixed order (axes as written, values as listed), each validated now.

        Validated by `load_config` like any `kchaos run`, the plan included: a point whose faults do not
        fit in its duration is refused here with the duration that would, not run as an `ok` that tested
        nothing.
        """
        names = list(self.axes)
        points: list[MatrixPoint] = []
        errors: list[str] = []
        for values in itertools.product(*(self.axes[name] for name in names)):
            settings = dict(zip(names, values, strict=True))
            if any(_matches(settings, rule) for rule in self.exclude):
                continue
            for repetition in range(1, self.repetitions + 1):
                run_id = point_id(settings, repetition, self.repetitions)
                try:
                    config = load_config(
                        **{**self.base, **settings}, run_id=run_id, runs_dir=runs_dir / self.name
                    )
                except ConfigError as exc:
                    errors.append(f"point {configuration_key(settings)}: {exc}")
                    break
                points.append(MatrixPoint(settings, repetition, config))
        if errors:
            raise MatrixError(
                f"matrix {self.name}: {len(errors)} point(s) are invalid (fix the axis or base values, "
                "each --flag named below being the setting with underscores, or leave combinations out "
                "with `exclude`):\n" + "\n".join(errors)
            )
        if not points:
            raise MatrixError(f"matrix {self.name}: `exclude` leaves no point to run")
        return points


def configuration_key(settings: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={setting_text(value)}" for name, value in settings.items()) or "base"


def point_id(settings: Mapping[str, Any], repetition: int, repetitions: int) -> str:
    """A directory name from the axis values: readable, unique within the matrix, stable across runs."""
    parts = [
        f"{_SHORT.get(name, name.replace('_', '-'))}-{setting_text(value)}"
        for name, value in settings.items()
    ]
    if repetitions > 1:
        parts.append(f"r{repetition}")
    text = re.sub(r"[^A-Za-z0-9._]+", "-", "_".join(parts) or "base").strip("-") or "base"
    text = re.sub(r"-?_-?", "_", text)
    if len(text) > _MAX_ID:
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        text = f"{text[: _MAX_ID - 9]}-{digest}"
    return text


def setting_text(value: Any) -> str:
    """How a setting's value reads in directory names, keys and tables (booleans as on/off)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    if isinstance(value, Mapping):  # broker_config, topic_config: the properties set, or "default"
        return ",".join(f"{key}={item}" for key, item in value.items()) or "default"
    return str(value)


def _matches(settings: Mapping[str, Any], rule: Mapping[str, Any]) -> bool:
    return all(name in settings and settings[name] == value for name, value in rule.items())


def _check_field(name: str, where: str) -> None:
    if name in RESERVED:
        raise MatrixError(f"{where}: {name} is chosen by the matrix itself (use `kchaos matrix --runs-dir`)")
    if name not in RunConfig.model_fields:
        known = ", ".join(sorted(set(RunConfig.model_fields) - set(RESERVED)))
        raise MatrixError(f"{where}: unknown setting {name!r}; settings are `kchaos run` options: {known}")


def _axis_example(name: str, given: Any) -> str:
    """A list that would do for axis `name`, in YAML: the one value written, else the setting's default."""
    if given is None or isinstance(given, list | Mapping):
        given = RunConfig.model_fields[name].get_default(call_default_factory=True)
        if isinstance(given, tuple | list):
            given = given[0] if given else "<value>"
        elif given is None:
            given = "<value>"
    return yaml.safe_dump([given], default_flow_style=True, width=200).strip()


def parse_matrix(data: Any, default_name: str, source: str = "matrix") -> Matrix:
    """Validates the file's structure; each point's values are validated by `Matrix.points`."""
    if not isinstance(data, Mapping):
        raise MatrixError(f"{source}: expected a mapping with `axes` (and `base`, `repetitions`, ...)")
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise MatrixError(f"{source}: unknown key(s) {', '.join(unknown)}; the keys are {', '.join(KEYS)}")
    name = str(data.get("name") or default_name)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise MatrixError(
            f"{source}: name {name!r}: use letters, digits, '.', '_' and '-' (a directory name)"
        )
    base = data.get("base") or {}
    if not isinstance(base, Mapping):
        raise MatrixError(f"{source}: base must be a mapping of settings, e.g. `base: {{duration: 30}}`")
    for key in base:
        _check_field(str(key), f"{source}: base")
    axes = data.get("axes")
    if not isinstance(axes, Mapping) or not axes:
        raise MatrixError(f"{source}: axes must map settings to lists of values, e.g. `acks: [all, '1']`")
    checked: dict[str, list[Any]] = {}
    for key, values in axes.items():
        _check_field(str(key), f"{source}: axes")
        if not isinstance(values, list) or not values:
            raise MatrixError(
                f"{source}: axes.{key} must be a non-empty list of values, e.g. "
                f"`{key}: {_axis_example(str(key), values)}`"
            )
        if len({json.dumps(v, sort_keys=True, default=str) for v in values}) != len(values):
            raise MatrixError(f"{source}: axes.{key} lists a value twice; list each value once")
        if key in base:
            raise MatrixError(f"{source}: {key} is both in base and an axis; keep it in one place")
        checked[str(key)] = list(values)
    exclude = data.get("exclude") or []
    if not isinstance(exclude, list) or not all(isinstance(rule, Mapping) for rule in exclude):
        raise MatrixError(
            f"{source}: exclude must be a list of mappings, e.g. `- {{acks: '1', idempotence: true}}`"
        )
    for rule in exclude:
        for key in rule:
            if key not in checked:
                raise MatrixError(f"{source}: exclude names {key!r}, which is not an axis")
    repetitions = data.get("repetitions", 1)
    if not isinstance(repetitions, int) or isinstance(repetitions, bool) or not 1 <= repetitions <= 100:
        raise MatrixError(f"{source}: repetitions must be a whole number from 1 to 100, not {repetitions!r}")
    return Matrix(
        name,
        dict(base),
        checked,
        [dict(rule) for rule in exclude],
        repetitions,
        str(data.get("description", "")),
    )


#: The resource package holding the example and nightly matrix files (`kchaos/matrices/` in a clone).
SHIPPED_PACKAGE = "kchaos.matrices"


def shipped_matrices() -> dict[str, Path]:
    """The matrix files kchaos ships, by name (the file's stem): an installed kchaos has no `kchaos/matrices/`
    folder to point at, so `kchaos matrix example` names one instead."""
    root = package_dir(SHIPPED_PACKAGE)
    if root is None:
        raise MatrixError(
            f"the shipped matrix files (package {SHIPPED_PACKAGE!r}) are missing; reinstall kchaos"
        )
    return {path.stem: path for path in sorted(root.glob("*.yaml"))}


def find_matrix_file(given: str) -> Path:
    """`given` as a path when it exists, else the shipped matrix file of that name. A path that is no
    regular file is refused: reading a FIFO waited forever for a writer."""
    path = Path(given)
    if path.exists():
        if not path.is_file():
            kind = "a directory" if path.is_dir() else "not a regular file (a FIFO, socket or device)"
            raise MatrixError(f"{path}: {kind}; give the path of a matrix YAML file, or a shipped one's name")
        return path
    shipped = shipped_matrices()
    if given in shipped:
        return shipped[given]
    raise MatrixError(
        f"{given}: no such matrix file; give a path, or the name of one kchaos ships: {', '.join(shipped)}"
    )


class DuplicateKey(yaml.YAMLError):
    """A mapping of the file names one key twice: `key` on 1-based `line`, first on line `first`."""

    def __init__(self, key: Any, line: int, first: int) -> None:
        super().__init__(f"key {key!r} on line {line} is already set on line {first}")
        self.key, self.line, self.first = key, line, first


class AliasRefused(yaml.YAMLError):
    """The file uses a YAML alias (`*name`), on 1-based `line`."""

    def __init__(self, line: int) -> None:
        super().__init__(f"alias on line {line}")
        self.line = line


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, except that a key set twice in one mapping is an error, and an alias is refused.

    Plain YAML keeps the last of two `acks:` lines, so a matrix file edited by two people would run a
    configuration neither wrote and say nothing; refused, the file says which line to remove.
    """

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Composes a node as PyYAML does, refusing an alias: a few lines of nested aliases (an "alias
        bomb") expand to billions of values, which exhausted memory. A matrix file has no need of them."""
        if self.check_event(yaml.AliasEvent):
            raise AliasRefused(self.peek_event().start_mark.line + 1)  # type: ignore[no-untyped-call]
        return super().compose_node(parent, index)

    def construct_unique_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)  # `<<:` merges first, as SafeLoader does; later keys may override
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise DuplicateKey(key, line, first_line[key])
            first_line[key] = line
        return self.construct_mapping(node, deep)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _UniqueKeyLoader.construct_unique_mapping,
)


def load_matrix(path: Path) -> Matrix:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except OSError as exc:
        raise MatrixError(f"{path}: cannot read it ({exc.strerror})") from None
    except UnicodeDecodeError as exc:  # binary, or another encoding: YAML is read as UTF-8
        raise MatrixError(_not_text(path, f"byte {exc.start} is not UTF-8")) from None
    except yaml.reader.ReaderError as exc:  # UTF-8, but with control characters YAML does not allow
        raise MatrixError(_not_text(path, f"character {exc.position} is a control character")) from None
    except DuplicateKey as exc:
        raise MatrixError(
            f"{path}: line {exc.line}: key {exc.key!r} is set twice (first on line {exc.first}); YAML "
            "would silently keep the last, so remove one of them"
        ) from None
    except AliasRefused as exc:
        raise MatrixError(
            f"{path}: line {exc.line}: YAML anchors and aliases (&name, *name) are not supported in a matrix "
            "file; write the values out"
        ) from None
    except yaml.YAMLError as exc:
        raise MatrixError(f"{path}: not valid YAML: {exc}") from None
    return parse_matrix(data, path.stem, str(path))


def _not_text(path: Path, why: str) -> str:
    return (
        f"{path}: not a text YAML file ({why}); give the path of a matrix file, or the name of one kchaos "
        "ships (`kchaos matrix --help` lists a matrix file's keys)"
    )


def parse_axis_override(text: str) -> tuple[str, list[Any]]:
    """`NAME=V1,V2` from the command line; values are read as YAML scalars (`true`, `2`, `all`)."""
    name, sep, values = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or not name or not values.strip():
        raise MatrixError(f"--axis {text!r}: write it as NAME=V1,V2, e.g. --axis kafka_version=4.1.1,4.3.1")
    parsed = [yaml.safe_load(part.strip()) for part in values.split(",") if part.strip()]
    return name, parsed


def point_summary(points: Sequence[MatrixPoint]) -> str:
    configurations = len({point.key for point in points})
    return f"{len(points)} run(s): {configurations} configuration(s)"
