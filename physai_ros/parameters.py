"""Every node's parameter schema (``config/schema/<node>.yaml``), read without ROS.

The schema files use generate_parameter_library's YAML format (ros2_controllers' parameter
files): a top-level key naming the node, then nested maps down to one entry per parameter::

    sim_bridge:
      real_time_factor:
        type: double                # bool | int | double | string | <one of those>_array
        default_value: 1.0
        description: sim seconds per wall second [-]; 0 = as fast as possible
        read_only: false            # true: set at start (params file, -p) only
        validation:
          bounds<>: [0.0, 1000.0]   # the only validator used: min and max, both included
      arm_controller:
        constraints:
          __map_joints:             # one entry per name in the list ``joints``:
            goal: {...}             # arm_controller.constraints.<joint>.goal

generate_parameter_library itself needs a C++/CMake build step; this module is the small part
of it a Python node needs: read the file, check it, coerce values to their declared type, and
write the documentation table (``python -m physai_ros.parameters --markdown``).
``physai_ros.nodes._common.declare_schema`` declares the parameters with ROS.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from physai_ros.errors import InvalidInput
from physai_ros.paths import config_path

NODES = (
    "sim_bridge",
    "tf_publisher",
    "pick",
    "trajectory",
    "so101_driver",
    "so101_emulator",
    "grasp_planner",
    "hand_pick",
    "dataset_recorder",
    "policy_runner",
    "teleop",
)
SCALARS = {"bool": bool, "int": int, "double": float, "string": str}
TYPES = (*SCALARS, *(f"{t}_array" for t in SCALARS))
FIELDS = {"type", "default_value", "description", "read_only", "validation"}
MAP = "__map_"  # generate_parameter_library's per-name maps: __map_joints
UNIT = re.compile(r"\[[^\]]+\]")  # a unit in brackets: [m], [N m], [Hz sim time], [-]


@dataclass(frozen=True)
class ParameterSpec:
    """One parameter of a schema: ROS name (dots between groups), type, default (of ``type``),
    description (with its unit), read_only, and bounds ``(min, max)`` or None."""

    name: str
    type: str
    default: Any
    description: str
    read_only: bool = False
    bounds: tuple[float, float] | None = None

    @property
    def numeric(self) -> bool:
        return self.type.removesuffix("_array") in ("int", "double")

    def coerce(self, value: Any) -> Any:
        """``value`` as this parameter's type (``1`` for a double is ``1.0``); raises
        ``InvalidInput`` for a value of another kind (a string for a number, a bool for an int)."""
        base = self.type.removesuffix("_array")
        if self.type.endswith("_array"):
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise InvalidInput(f"{self.name}: {value!r} is not a list ({self.type})")
            return [_scalar(self.name, base, v) for v in value]
        return _scalar(self.name, base, value)


def _scalar(name: str, base: str, value: Any) -> Any:
    kind = SCALARS[base]
    accepted = {bool: (bool,), str: (str,), int: (int,), float: (int, float)}[kind]
    if not isinstance(value, accepted) or (kind is not bool and isinstance(value, bool)):
        raise InvalidInput(f"{name}: {value!r} is not of type {base}")
    return kind(value)


class Schema(dict[str, ParameterSpec]):
    """A node's parameters by name, in the file's order (``load_schema``)."""

    node: str = ""

    def under(self, group: str) -> Schema:
        """The parameters of ``group`` (``"arm_controller"``: ``arm_controller.*``)."""
        return self._sub({n: s for n, s in self.items() if n.startswith(group + ".")})

    def without(self, *groups: str) -> Schema:
        """Every parameter but those named in ``groups`` or under them."""
        gone = tuple(g + "." for g in groups)
        return self._sub(
            {n: s for n, s in self.items() if n not in groups and not n.startswith(gone)}
        )

    def only(self, *names: str) -> Schema:
        """The parameters ``names`` (each must exist)."""
        missing = [n for n in names if n not in self]
        if missing:
            raise InvalidInput(f"{self.node}: no parameters {missing} in its schema")
        return self._sub({n: self[n] for n in names})

    def renamed(self, group: str, to: str) -> Schema:
        """``group.*`` as ``to.*`` (a hand's finger controller ``f1_controller.*`` declared
        from ``gripper_controller.*``)."""
        out = {}
        for name, spec in self.items():
            if name.startswith(group + "."):
                name = to + name[len(group) :]
                spec = replace(spec, name=name)
            out[name] = spec
        return self._sub(out)

    def mapped(self, key: str, names: Iterable[str]) -> Schema:
        """``__map_<key>`` entries expanded, one per name (``constraints.__map_joints.goal`` →
        ``constraints.shoulder_pan.goal``, ...); the others as they are."""
        marker = f".{MAP}{key}."
        out = {}
        for name, spec in self.items():
            if marker not in name:
                out[name] = spec
                continue
            for item in names:
                full = name.replace(marker, f".{item}.")
                out[full] = replace(spec, name=full)
        return self._sub(out)

    @property
    def fixed(self) -> Schema:
        """The parameters without a ``__map_`` (their names are known before the node runs)."""
        return self._sub({n: s for n, s in self.items() if MAP not in n})

    def defaults(self) -> dict[str, Any]:
        return {name: spec.default for name, spec in self.items()}

    def _sub(self, items: Mapping[str, ParameterSpec]) -> Schema:
        out = Schema(items)
        out.node = self.node
        return out


def parse_schema(data: Any, source: str = "schema") -> Schema:
    """A ``Schema`` from generate_parameter_library YAML (already loaded); raises
    ``InvalidInput`` naming the entry for an unknown type or field, a default of the wrong
    type, or one outside its bounds."""
    if not isinstance(data, Mapping) or len(data) != 1:
        raise InvalidInput(f"{source}: one top-level key (the node's name) expected")
    ((node, tree),) = data.items()
    schema = Schema()
    schema.node = str(node)
    _walk(tree, "", schema, source)
    return schema


def _walk(tree: Any, prefix: str, schema: Schema, source: str) -> None:
    if not isinstance(tree, Mapping):
        raise InvalidInput(f"{source}: {prefix or 'the node'} is not a map")
    for key, value in tree.items():
        name = prefix + str(key)
        if isinstance(value, Mapping) and "type" in value:
            schema[name] = _spec(name, value, source)
        else:
            _walk(value, name + ".", schema, source)


def _spec(name: str, entry: Mapping[str, Any], source: str) -> ParameterSpec:
    where = f"{source}: {name}"
    unknown = set(entry) - FIELDS
    if unknown:
        raise InvalidInput(f"{where}: unknown fields {sorted(unknown)}")
    if entry["type"] not in TYPES:
        raise InvalidInput(f"{where}: type {entry['type']!r} is not one of {TYPES}")
    if "default_value" not in entry or "description" not in entry:
        raise InvalidInput(f"{where}: default_value and description are needed")
    bounds = None
    validation = dict(entry.get("validation") or {})
    if "bounds<>" in validation:
        low, high = validation.pop("bounds<>")
        bounds = (low, high)
    if validation:
        raise InvalidInput(f"{where}: validators {sorted(validation)} are not supported")
    spec = ParameterSpec(
        name,
        entry["type"],
        None,
        str(entry["description"]),
        bool(entry.get("read_only", False)),
        bounds,
    )
    default = spec.coerce(entry["default_value"])
    if bounds is not None:
        if not spec.numeric or spec.type.endswith("_array"):
            raise InvalidInput(f"{where}: bounds<> needs an int or double")
        bounds = (spec.coerce(bounds[0]), spec.coerce(bounds[1]))
        if not bounds[0] <= default <= bounds[1]:
            raise InvalidInput(f"{where}: default {default} outside {list(bounds)}")
    return replace(spec, default=default, bounds=bounds)


def schema_path(node: str) -> Path:
    return config_path(f"schema/{node}.yaml")


@cache
def _load(node: str) -> Schema:
    path = schema_path(node)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise InvalidInput(f"{path} is not valid YAML: {err}") from err
    schema = parse_schema(data, str(path))
    if schema.node != node:
        raise InvalidInput(f"{path}: top-level key {schema.node!r}, expected {node!r}")
    return schema


def load_schema(node: str) -> Schema:
    """The schema of ``node`` (``config/schema/<node>.yaml``; read once)."""
    return _load(node)._sub(_load(node))


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, str):
        text = f'"{value}"' if value == "" else value
    elif isinstance(value, list):
        text = "[" + ", ".join(_cell(v).strip("`") for v in value) + "]"
    else:
        text = f"{value:g}" if isinstance(value, float) else str(value)
    return f"`{text}`"


def markdown(nodes: Iterable[str] = NODES) -> str:
    """The parameter tables of ``nodes``, as docs/parameters.md holds them."""
    lines = [
        "# Node parameters",
        "",
        "Generated from `config/schema/<node>.yaml` by `python -m physai_ros.parameters "
        "--markdown`; do not edit by hand (`test/test_parameters.py` checks it is current). "
        "Defaults are the default robot's where a robot changes them. *read-only*: set at "
        "start only (`--params-file`, `-p`); the others also with `ros2 param set`.",
    ]
    for node in nodes:
        lines += [
            "",
            f"## {node}",
            "",
            f"`config/schema/{node}.yaml`; defaults to copy: `config/{node}.yaml`.",
            "",
            "| parameter | type | default | range | read-only | description |",
            "|---|---|---|---|---|---|",
        ]
        for name, spec in load_schema(node).items():
            shown = name.replace(f"{MAP}joints", "<joint>")
            bounds = f"{_cell(spec.bounds[0])} … {_cell(spec.bounds[1])}" if spec.bounds else ""
            text = spec.description.replace("|", "\\|")
            lines.append(
                f"| `{shown}` | {spec.type} | {_cell(spec.default)} | {bounds} | "
                f"{'yes' if spec.read_only else ''} | {text} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print docs/parameters.md")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(markdown())
        return 0
    for node in NODES:
        print(f"{node}: {len(load_schema(node))} parameters ({schema_path(node)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
