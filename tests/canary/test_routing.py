"""Routing: a stable share by key (the same arm in every process), a seedable draw without one."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardrail.canary.routing import Router, position
from guardrail.errors import ConfigError, UsageError

KEYS = st.one_of(st.text(max_size=40), st.integers(), st.binary(max_size=40))


@given(KEYS, st.floats(min_value=0, max_value=1), st.floats(min_value=0, max_value=1))
def test_a_key_that_reaches_the_candidate_stays_there_as_the_share_grows(key: str | int | bytes, a: float,
                                                                          b: float) -> None:
    low, high = sorted((a, b))
    if Router(low, "triage").to_candidate(key):
        assert Router(high, "triage").to_candidate(key)
    assert 0.0 <= position("triage", key) < 1.0


def test_the_share_of_keys_is_the_share_asked() -> None:
    router = Router(0.05, "triage")
    chosen = sum(router.to_candidate(f"user-{n}") for n in range(20000))
    assert 0.045 * 20000 <= chosen <= 0.055 * 20000


def test_a_key_lands_on_the_same_arm_in_another_process() -> None:
    keys = [f"user-{n}" for n in range(200)]
    here = [position("triage", key) for key in keys]
    code = ("import sys; from guardrail.canary.routing import position; "
            f"print(repr([position('triage', k) for k in {keys!r}]))")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(there) == here


def test_two_canaries_split_the_same_keys_independently() -> None:
    keys = range(4000)
    first = {key for key in keys if Router(0.5, "prompt-v2").to_candidate(key)}
    second = {key for key in keys if Router(0.5, "model-b").to_candidate(key)}
    assert 0.2 * 4000 <= len(first & second) <= 0.3 * 4000  # about a quarter, not all or none


def test_a_seeded_draw_repeats_and_an_int_key_is_not_its_text() -> None:
    one, two = Router(0.3, "x", seed=7), Router(0.3, "x", seed=7)
    assert [one.to_candidate(None) for _ in range(50)] == [two.to_candidate(None) for _ in range(50)]
    assert position("x", 12) != position("x", "12")


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan"), True])
def test_a_share_outside_zero_to_one_is_refused(share: float) -> None:
    with pytest.raises(ConfigError):
        Router(share, "x")


def test_a_key_of_another_type_is_refused() -> None:
    with pytest.raises(UsageError):
        position("x", 1.5)  # type: ignore[arg-type]
