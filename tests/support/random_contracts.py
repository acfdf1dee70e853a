"""Random contracts with values for them (hypothesis strategies): a contract *shape* (:class:`Spec`) drawn from
scalars, literals, lists, dicts, optionals, unions, models and TypedDicts, built into the Python type, and a value
that mostly fits it. Shared by the parse layer's equivalence and fast-path tests."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

from hypothesis import strategies as st
from pydantic import create_model
from typing_extensions import NotRequired, TypedDict  # noqa: UP035 - the brief's TypedDict

json_floats = st.floats(allow_nan=False, allow_infinity=False)

FIELD_NAMES = ["a", "b", "name", "이름", "x_y", "items"]
_counter = itertools.count()


@dataclass(frozen=True)
class Spec:
    """A contract shape: ``kind`` plus children; ``build()`` makes the Python type."""

    kind: str
    args: tuple[Any, ...] = ()

    def build(self) -> Any:
        k, a = self.kind, self.args
        simple = {"int": int, "float": float, "str": str, "bool": bool, "none": type(None), "any": Any}
        if k in simple:
            return simple[k]
        if k == "literal":
            return Literal[a]  # type: ignore[valid-type]
        if k == "list":
            return list[a[0].build()]  # type: ignore[misc]
        if k == "dict":
            return dict[str, a[0].build()]  # type: ignore[misc]
        if k == "optional":
            return Optional[a[0].build()]  # noqa: UP045
        if k == "union":
            return Union[tuple(s.build() for s in a)]  # noqa: UP007
        fields = a
        if k == "model":
            return create_model(f"M{next(_counter)}", **{  # type: ignore[call-overload]
                name: (spec.build(), ...) if required else (spec.build(), default)
                for name, spec, required, default in fields})
        annotations = {name: spec.build() if required else NotRequired[spec.build()]
                       for name, spec, required, _ in fields}
        return TypedDict(f"T{next(_counter)}", annotations)  # type: ignore[operator]


leaf_specs = st.one_of(
    st.sampled_from([Spec(k) for k in ("int", "float", "str", "bool", "none", "any")]),
    st.lists(st.one_of(st.sampled_from(["a", "b", "가", ""]), st.integers(-3, 3)), min_size=1, max_size=3,
             unique_by=lambda v: (type(v), v)).map(lambda vs: Spec("literal", tuple(vs))),
)


def _fields(kids: Any) -> Any:
    return st.lists(st.tuples(st.sampled_from(FIELD_NAMES), kids, st.booleans(), st.sampled_from([None, 0, "d"])),
                    max_size=3, unique_by=lambda f: f[0]).map(tuple)


specs = st.recursive(
    leaf_specs,
    lambda kids: st.one_of(
        kids.map(lambda s: Spec("list", (s,))),
        kids.map(lambda s: Spec("dict", (s,))),
        kids.map(lambda s: Spec("optional", (s,))),
        st.lists(kids, min_size=2, max_size=2).map(lambda ss: Spec("union", tuple(ss))),
        _fields(kids).map(lambda fs: Spec("model", fs)),
        _fields(kids).map(lambda fs: Spec("typeddict", fs)),
    ),
    max_leaves=6,
)

plain_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30), json_floats,
              st.text(st.characters(exclude_categories=["Cs"]), max_size=4), st.sampled_from(["a", "b", "1", "d"])),
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(st.sampled_from([*FIELD_NAMES, "zz"]), kids,
                                                                       max_size=3)),
    max_leaves=8,
)


@st.composite
def value_for(draw: Any, spec: Spec) -> Any:
    """Mostly a value that fits ``spec``; sometimes one that does not (a random JSON value, a missing or an
    extra field, a near miss such as 1.0 for an int or 1 for a bool)."""
    if draw(st.integers(0, 7)) == 7:
        return draw(plain_json)
    k, a = spec.kind, spec.args
    if k == "int":
        return draw(st.one_of(st.integers(-(10**30), 10**30), st.sampled_from([1.0, True, "1"])))
    if k == "float":
        return draw(st.one_of(json_floats, st.integers(-(10**30), 10**30), st.sampled_from([True, "1.5"])))
    if k == "str":
        return draw(st.text(st.characters(exclude_categories=["Cs"]), max_size=5))
    if k == "bool":
        return draw(st.one_of(st.booleans(), st.sampled_from([0, 1, "true"])))
    if k == "none":
        return None
    if k == "any":
        return draw(plain_json)
    if k == "literal":
        return draw(st.one_of(st.sampled_from(a), st.sampled_from([True, False, 1.0, "A", 0])))
    if k == "list":
        return draw(st.lists(value_for(a[0]), max_size=3))
    if k == "dict":
        return draw(st.dictionaries(st.sampled_from(FIELD_NAMES), value_for(a[0]), max_size=3))
    if k == "optional":
        return None if draw(st.booleans()) else draw(value_for(a[0]))
    if k == "union":
        return draw(value_for(draw(st.sampled_from(a))))
    out = {}
    for name, sub, required, _ in a:
        if draw(st.integers(0, 5)) != 5 or (not required and draw(st.booleans())):
            out[name] = draw(value_for(sub))
    if draw(st.integers(0, 7)) == 7:
        out["extra"] = 1
    return out


@st.composite
def contract_and_value(draw: Any) -> tuple[Any, Spec, Any]:
    spec = draw(specs)
    return spec.build(), spec, draw(value_for(spec))
