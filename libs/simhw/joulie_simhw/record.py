"""Frozen records (immutable classes of named, typed fields) that import fast.

fakesmi is a process start for every GPU tool call an agent makes (about 12 a second at 1000
emulated Nodes) and reads the GPU state through records. ``dataclasses`` cost each start more than
the interpreter itself: importing it imports ``inspect`` (``ast``, ``dis``, ``tokenize`` and their
regular expressions), and each decorated class compiles generated source at import. A record is
the same contract for the type checker (``dataclass_transform``: keyword and positional
construction, defaults, ``field(default_factory=...)``, frozen), built from closures at import.

Equality compares the class and the fields in order, as a dataclass's ``__eq__`` does; the hash is
the fields' (unhashable when a field is, like a frozen dataclass's).
"""

from __future__ import annotations

# typing is not imported at run time (16 M instructions a fakesmi start, its regular expressions): the
# annotations are strings (``from __future__ import annotations``), read by the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    R = TypeVar("R")
else:

    def dataclass_transform(**_options: object) -> Callable[[Callable[..., object]], Callable[..., object]]:
        return lambda f: f


class FrozenInstanceError(AttributeError):
    """An attempt to set or delete a record's field."""


_MISSING = object()
_FIELDS = "__record_fields__"


class _Field:
    """A field's default made afresh for each record (a mutable default shared by every record would
    leak one record's change into all)."""

    def __init__(self, default_factory: Callable[[], object]) -> None:
        self.default_factory = default_factory


def field(*, default_factory: Callable[[], Any]) -> Any:
    """A field whose default is ``default_factory()``, called for each record built without it."""
    return _Field(default_factory)


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[R]) -> type[R]:
    """Make ``cls`` a frozen record of its annotated fields, in their order."""
    names: tuple[str, ...] = tuple(cls.__dict__.get("__annotations__", {}))
    defaults: dict[str, object] = {}
    factories: dict[str, Callable[[], object]] = {}
    for name in names:
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, _Field):
            factories[name] = value.default_factory
            delattr(cls, name)
        elif value is not _MISSING:
            defaults[name] = value
    known = frozenset(names)
    cls_name = cls.__name__

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        if len(args) > len(names):
            raise TypeError(f"{cls_name}() takes {len(names)} positional arguments but {len(args)} were given")
        values = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key not in known:
                raise TypeError(f"{cls_name}() got an unexpected keyword argument {key!r}")
            if key in values:
                raise TypeError(f"{cls_name}() got multiple values for argument {key!r}")
            values[key] = value
        for name in names:
            if name not in values:
                if name in defaults:
                    values[name] = defaults[name]
                elif name in factories:
                    values[name] = factories[name]()
                else:
                    raise TypeError(f"{cls_name}() missing required argument {name!r}")
        self.__dict__.update(values)

    def __setattr__(self: object, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r} of {cls_name}")

    def __delattr__(self: object, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r} of {cls_name}")

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(self.__dict__[n] == other.__dict__[n] for n in names)

    def __hash__(self: object) -> int:
        return hash(tuple(self.__dict__[n] for n in names))

    def __repr__(self: object) -> str:
        return f"{cls_name}({', '.join(f'{n}={self.__dict__[n]!r}' for n in names)})"

    for method in (__init__, __setattr__, __delattr__, __eq__, __hash__, __repr__):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
    setattr(cls, _FIELDS, names)
    return cls


def fields_of(obj: object) -> tuple[str, ...]:
    """A record's field names, in order; a TypeError for anything else."""
    names: tuple[str, ...] | None = getattr(obj.__class__, _FIELDS, None)
    if names is None:
        raise TypeError(f"{obj.__class__.__name__} is not a record")
    return names


def asdict(obj: object) -> dict[str, Any]:
    """{field: value} of a record (values as they are, not copied)."""
    return {n: obj.__dict__[n] for n in fields_of(obj)}


def replace(obj: R, **changes: object) -> R:
    """A copy of record ``obj`` with ``changes`` (field: value); a TypeError naming an unknown field."""
    values = asdict(obj)
    for key in changes:
        if key not in values:
            raise TypeError(f"{obj.__class__.__name__} has no field {key!r}")
    values.update(changes)
    out: R = obj.__class__(**values)
    return out
