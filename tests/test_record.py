"""mem.core.record.Record builds what typing.NamedTuple builds, without importing typing."""

from __future__ import annotations

import pickle
import typing

import pytest

from mem.core.record import Record


class Point(Record):
    """A point."""

    x: int
    y: int = 0
    label: str | None = None

    def moved(self, dx: int) -> Point:
        return self._replace(x=self.x + dx)

    @property
    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


class TypedPoint(typing.NamedTuple):
    """A point."""

    x: int
    y: int = 0
    label: str | None = None


def test_a_record_is_the_namedtuple_typing_would_build():
    p = Point(3)
    assert p == (3, 0, None) and isinstance(p, tuple) and Point.__mro__[1:] == TypedPoint.__mro__[1:]
    for attr in ("_fields", "_field_defaults", "__doc__", "__module__", "__slots__"):
        assert getattr(Point, attr) == getattr(TypedPoint, attr), attr
    # the annotations as written (typing's are ForwardRefs of the same strings)
    assert Point.__annotations__ == {"x": "int", "y": "int", "label": "str | None"} and Point.__qualname__ == "Point"
    assert repr(Point(1, 2, "a")) == "Point(x=1, y=2, label='a')"
    assert p.moved(2) == Point(5) and Point(-1, 2).norm1 == 3 and p._asdict() == {"x": 3, "y": 0, "label": None}
    assert pickle.loads(pickle.dumps(Point(1, 2))) == Point(1, 2)
    with pytest.raises(AttributeError):
        p.z = 1  # no __dict__, as a NamedTuple


def test_a_field_without_a_default_after_one_with_is_refused_as_typing_does():
    with pytest.raises(TypeError):
        class Bad(Record):
            a: int = 0
            b: int
    with pytest.raises(AttributeError):
        class Worse(Record):
            a: int

            def _asdict(self):
                return {}
