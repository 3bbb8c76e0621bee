"""``Record``: typing.NamedTuple's class syntax without importing typing.

Example: class Point(Record): x: int; y: int = 0  →  Point(1) == (1, 0), a collections.namedtuple

The recall hook runs before every prompt and its modules keep their small results in NamedTuples;
``import typing`` (with contextlib and warnings) costs it about 2 ms, and each ``typing.NamedTuple``
class three times what ``collections.namedtuple`` does. A subclass of Record is the same single
namedtuple class typing would build: its fields from the annotations (in order, the defaults after
them), its docstring, methods and other attributes copied onto it, ``__annotations__`` kept. Type
checkers see typing.NamedTuple itself.

uses: nothing beyond the standard library
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; type checkers treat it as True

#: names typing.NamedTuple refuses to have overwritten (the namedtuple's own machinery)
_PROHIBITED = frozenset(("__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                         "_make", "_replace", "_asdict", "_source"))
_SPECIAL = frozenset(("__module__", "__annotations__", "__classcell__"))


class _RecordMeta(type):
    def __new__(mcls, name: str, bases: tuple, namespace: dict):
        if not bases:  # Record itself
            return super().__new__(mcls, name, bases, namespace)
        annotations = namespace.get("__annotations__", {})
        fields = list(annotations)
        defaults = []
        for field in fields:
            if field in namespace:
                defaults.append(namespace[field])
            elif defaults:
                raise TypeError(f"{name}: the field {field} without a default follows one with a default")
        cls = namedtuple(name, fields, defaults=defaults, module=namespace["__module__"])
        cls.__annotations__ = dict(annotations)
        for key, value in namespace.items():
            if key in _PROHIBITED:
                raise AttributeError(f"Cannot overwrite NamedTuple attribute {key}")
            if key not in _SPECIAL and key not in fields:
                setattr(cls, key, value)
        return cls


if TYPE_CHECKING:
    from typing import NamedTuple as Record
else:
    class Record(metaclass=_RecordMeta):
        """The base of a NamedTuple built without typing (this module's docstring)."""
