"""YAML read as a user means it: a config or experiment file must be a mapping, give each key once, write numbers in
plain decimal digits (YAML 1.1 reads 010, 0x8, 1:00 and 5_12 otherwise) and hold no tag or self-containing alias; each
refusal is a :class:`~ftcl_core.config_fields.ConfigError` that names the file, the line and the fix."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import yaml

from ftcl_core.config_fields import ConfigError

MAX_VALUES = 100_000  # the most values a config or experiment file may expand to (its aliases written out)
MAX_DIGITS = 100  # the longest number a config may write (the largest key, seed, has 10 digits)
DECIMAL = re.compile(r"[-+]?(0|[1-9][0-9]*)")  # an integer as a user means it (YAML 1.1 also reads 010, 0x8, 1:00, 5_12)


class _UniqueKeys(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last silently)."""

    def construct_mapping(self, node, deep=False):  # noqa: ANN001, ANN201  (PyYAML's signature)
        keys = [k for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
        if twice := next((k for i, k in enumerate(keys) if k.value in [j.value for j in keys[:i]]), None):
            raise ConfigError(f"gives the key {twice.value!r} twice (again on line {twice.start_mark.line + 1}): YAML "
                              "would keep the second silently; merge them into one")
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_float(self, node):  # noqa: ANN001, ANN201  (PyYAML's signature)
        value = super().construct_yaml_float(node)
        if "_" in node.value:  # 0.99_9 is 0.999 to YAML 1.1
            raise ConfigError(f"writes {node.value!r} (line {node.start_mark.line + 1}), which YAML reads as {value} "
                              "(underscores dropped); write the number in plain decimal digits")
        if ":" in node.value:  # 1:30.0 is 90.0 to YAML 1.1
            raise ConfigError(f"writes {node.value!r} (line {node.start_mark.line + 1}), which YAML reads as {value} (a "
                              "base-60 number); write the number in plain decimal digits")
        return value

    def construct_yaml_int(self, node):  # noqa: ANN001, ANN201  (PyYAML's signature)
        if len(node.value) > MAX_DIGITS:  # Python refuses to read an int of over 4 300 digits (a ValueError)
            raise ConfigError(f"writes a number of {len(node.value)} digits (line {node.start_mark.line + 1}); no key "
                              f"takes one of more than {MAX_DIGITS}: write the number meant")
        value = super().construct_yaml_int(node)
        if not DECIMAL.fullmatch(node.value.strip()):  # 010 is 8 to YAML 1.1, 0x8 is 8, 1:00 is 60
            raise ConfigError(f"writes {node.value!r} (line {node.start_mark.line + 1}), which YAML reads as {value} (an "
                              "octal, hex, base-60 or underscored number); write the number in plain decimal digits")
        return value


_UniqueKeys.add_constructor("tag:yaml.org,2002:int", _UniqueKeys.construct_yaml_int)
_UniqueKeys.add_constructor("tag:yaml.org,2002:float", _UniqueKeys.construct_yaml_float)


def load_yaml_mapping(path: str | os.PathLike, what: str, example: str) -> dict:
    """The YAML mapping in the file ``path`` (``what``: a config file, an experiment file; ``example``: one to
    compare it with); an empty path, a missing file, a folder (or a device, a link loop), an empty file, not text,
    not YAML, not a mapping or a key given twice is a :class:`ConfigError` naming it and the fix."""
    if not str(path).strip():  # Path("") is ".", the folder the command runs in
        raise ConfigError(f"the {what}'s path is empty: give the path of a YAML file, e.g. {example}.")
    if problem := _not_a_file(Path(path)):
        raise ConfigError(f"{what} {path} {problem}: give the path of a YAML file, e.g. {example}.")
    try:
        loaded = yaml.load(Path(path).read_bytes().decode(), Loader=_UniqueKeys)  # noqa: S506  (a safe loader)
        problem = "is empty" if loaded is None else "" if isinstance(loaded, dict) else \
            f"holds a YAML {type(loaded).__name__} ({' '.join(str(loaded).split())[:60]}), not a mapping"
    except ConfigError as err:
        problem = str(err)
    except RecursionError:  # thousands of nested brackets
        problem = "is not a YAML mapping (nested too deeply to read)"
    except yaml.constructor.ConstructorError as err:  # !!python/object and other tags the safe loader refuses
        mark = getattr(err, "problem_mark", None)
        problem = (f"holds a YAML tag (a '!!' type{f', line {mark.line + 1}' if mark else ''}) that a config does not "
                   "read: write plain values")
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        problem = f"is not a YAML mapping ({' '.join(str(err).split())[:160]})"
    if not problem and _contains_itself(loaded):  # an alias to its own anchor (a: &x {b: *x}): endless to walk
        problem = "holds a mapping that contains itself (a YAML alias inside its own anchor)"
    elif not problem and (size := _expanded_size(loaded)) > MAX_VALUES:
        problem = (f"expands to {size:.3g} values through its aliases (more than {MAX_VALUES}; a config holds about "
                   "a hundred): write the values out, or use fewer aliases")
    if problem:
        raise ConfigError(f"{what} {path} {problem}; compare it with {example}.")
    return loaded


def _not_a_file(p: Path) -> str | None:
    """What ``p`` is, where it is not a regular file: missing, a folder, a device, a symbolic link loop."""
    try:
        p.stat()
    except OSError as err:
        return "is a symbolic link loop" if err.errno == errno.ELOOP else "not found"
    return "is a folder" if p.is_dir() else None if p.is_file() else "is not a regular file (a device or a pipe)"


def _contains_itself(x: object, within: tuple = (), clear: set | None = None) -> bool:
    """Whether a loaded mapping or list holds itself (an alias inside its own anchor); each shared value (an alias's
    target) is walked once (``clear``: the ones found without a cycle), so that aliases of aliases stay linear."""
    clear = set() if clear is None else clear
    if not isinstance(x, (dict, list)) or id(x) in clear:
        return False
    if any(x is w for w in within) or any(_contains_itself(v, (*within, x), clear)
                                          for v in (x.values() if isinstance(x, dict) else x)):
        return True
    clear.add(id(x))
    return False


def _expanded_size(x: object, sizes: dict[int, int] | None = None) -> int:
    """How many values ``x`` holds with every alias written out (each shared value counted once per use, computed
    once): a few aliases of aliases expand to billions (the "billion laughs"), which no config needs."""
    sizes = {} if sizes is None else sizes
    if not isinstance(x, (dict, list)):
        return 1
    if id(x) not in sizes:
        sizes[id(x)] = 1 + sum(_expanded_size(v, sizes) for v in (x.values() if isinstance(x, dict) else x))
    return sizes[id(x)]
