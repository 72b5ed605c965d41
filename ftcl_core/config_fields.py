"""Typed config sections: a frozen dataclass whose fields are checked against their annotations, then by its own
``check``.

:class:`Section` is the base of every section of a run config (:mod:`ftcl_core.config_sections`) and of the config
itself (:class:`ftcl_core.config.RunConfig`): a number where a number belongs, one of the listed names where a
``Literal`` stands, every float finite; :class:`ConfigError` names the key and the fix. This module imports nothing
from ``ftcl_core`` (a test walks the imports).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Literal


class ConfigError(ValueError):
    """A config key or value is wrong; the message names the key and the fix."""


# ---------------------------------------------------------------------------------------------------
# Type checks from the annotations
# ---------------------------------------------------------------------------------------------------


def _describe(tp: Any) -> str:
    """How an annotation reads in an error message."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is bool:
        return "true or false"
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if tp is type(None):
        return "null"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is tuple:
        inner = _describe(args[0])
        return f"a list of {inner}s" if args[-1] is Ellipsis else f"a list of {len(args)} ({inner} each)"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    return str(tp)


# YAML 1.1 reads a float only with a dot and a signed exponent: "1e-4" and "1.0e4" stay strings
UNREAD_NUMBER = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+")


def _number(text: str, integer: bool) -> int | float | None:
    """A numeric field takes a string only where YAML 1.1 left a number unread (``1e-4``, ``1.0e4``: exponent form,
    ASCII digits); any other string (``"2"``, ``"nan"``, ``"١"``, which Python's ``float`` would read) is no
    number, so a quoted or typed-as-text value is refused, not coerced."""
    if not UNREAD_NUMBER.fullmatch(text.strip()):
        return None
    x = float(text)
    if integer:
        return int(x) if x.is_integer() else None
    return x


def _non_ascii_digits(value: Any) -> bool:
    """Whether ``value`` is text Python would read as a number in digits other than 0-9 (``float("١")`` is 1.0)."""
    if not isinstance(value, str) or value.isascii():
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def is_numpy_bool(value: Any) -> bool:
    """NumPy's bool (``np.True_``), told without importing NumPy."""
    return type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")


def _is_bool(value: Any) -> bool:
    """Python's bool or NumPy's."""
    return isinstance(value, bool) or is_numpy_bool(value)


def _conform(value: Any, tp: Any) -> tuple[bool, Any]:
    """(True, ``value`` in the annotation's type) or (False, None). Lists become tuples (frozen); integers are
    numbers; numeric strings that YAML left unread are numbers; bools are never numbers, numbers never bools."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return True, value
    if isinstance(tp, type) and issubclass(tp, Section):
        return isinstance(value, tp), value
    if tp is type(None):
        return value is None, None
    if tp is bool:  # NumPy's bools too, stored as Python's
        return (True, bool(value)) if _is_bool(value) else (False, None)
    if tp in (int, float):
        if _is_bool(value):
            return False, None
        if isinstance(value, str):
            value = _number(value, integer=tp is int)
        if tp is int and isinstance(value, float) and value.is_integer():  # 1.0e+3 as YAML reads it, like "1e3"
            value = int(value)
        if tp is int:  # NumPy's integers too, stored as Python's
            return (True, int(value)) if isinstance(value, numbers.Integral) else (False, None)
        return (True, float(value)) if isinstance(value, numbers.Real) else (False, None)
    if tp is str:
        return isinstance(value, str), value
    if origin is Literal:
        return (not isinstance(value, bool) and value in args), value
    if origin is tuple:
        if not isinstance(value, (list, tuple)) or (args[-1] is not Ellipsis and len(value) != len(args)):
            return False, None
        kinds = [args[0]] * len(value) if args[-1] is Ellipsis else list(args)
        out = [_conform(v, k) for v, k in zip(value, kinds)]
        return all(ok for ok, _ in out), tuple(v for _, v in out)
    if origin in (typing.Union, types.UnionType):
        for arm in args:
            ok, v = _conform(value, arm)
            if ok:
                return True, v
        return False, None
    raise TypeError(f"config annotation {tp!r} is not supported")  # a programming error, not a user's


def did_you_mean(name: str, known: list[str]) -> str:
    """``" (did you mean 'x'?)"`` naming the known names closest to ``name`` (case aside), or ``""`` when none is."""
    lower = {k.lower(): k for k in known}
    close = [lower[c] for c in difflib.get_close_matches(str(name).lower(), list(lower), n=3)]
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def _type_error(key: str, value: Any, tp: Any, default: Any) -> ConfigError:
    if isinstance(tp, type) and issubclass(tp, Section):  # a section given a dict or another section
        return ConfigError(f"{key}={value!r} must be a {tp.__name__}: pass {tp.__name__}(**d) for a dict d, or build the "
                           f"whole config from dicts, RunConfig.from_dict({{'{key}': d}}).")
    if typing.get_origin(tp) is not Literal:
        why = "; it holds digits that are not ASCII: write the number in the digits 0-9" if _non_ascii_digits(value) else ""
        return ConfigError(f"{key}={value!r} must be {_describe(tp)}{why} (default {_yaml(default)}).")
    choices = typing.get_args(tp)
    close = difflib.get_close_matches(value, [str(a) for a in choices], n=1) if isinstance(value, str) else []
    hint = f"; did you mean {close[0]!r}?" if close else "."
    return ConfigError(f"{key}={value!r}: choose one of {choices}{hint}")


def _floats(value: Any) -> list[float]:
    """The floats in a conformed value (a number, or a tuple of them)."""
    if isinstance(value, float):
        return [value]
    return [x for v in value for x in _floats(v)] if isinstance(value, tuple) else []


def _yaml(value: Any) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else repr(value)


@dataclass(frozen=True)
class Section:
    """A config section: frozen, its fields type-checked from their annotations, then :meth:`check`-ed."""

    section: ClassVar[str] = ""  # the YAML key of the section

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            ok, conformed = _conform(value, hints[f.name])
            if not ok:
                default = f.default if f.default is not dataclasses.MISSING else None
                raise _type_error(f"{self.key(f.name)}", value, hints[f.name], default)
            if not all(math.isfinite(x) for x in _floats(conformed)):
                default = _yaml(_plain(f.default)) if f.default is not dataclasses.MISSING else "none"
                raise ConfigError(f"{self.key(f.name)}={_yaml(_plain(conformed))} must be finite (no nan or inf); "
                                  f"the default is {default}.")
            object.__setattr__(self, f.name, conformed)  # frozen: set once, here
        self.check()

    def key(self, field_name: str) -> str:
        return f"{self.section}.{field_name}" if self.section else field_name

    def check(self) -> None:
        """Value checks beyond the type (ranges, combinations inside the section)."""

    def _positive(self, *names: str) -> None:
        for n in names:
            if getattr(self, n) < 1:
                raise ConfigError(f"{self.key(n)}={getattr(self, n)} must be >= 1.")


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, tuple) else value
