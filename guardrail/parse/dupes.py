"""Screening strict JSON text for a key given twice in one object, for the fast paths.

Pydantic (like ``json``) lets the last of two equal keys win without a word, so a fast path that hands
text straight to pydantic must first know that no object repeats a key; where one might, the stages read
the text and decide (an exact repeat collapses with a fix, a conflicting one is ambiguous). The check is
``jiter``'s duplicate-key detection, in Rust; text with fewer than two colons cannot hold two keys and
skips it.
"""

from __future__ import annotations

import jiter


def may_repeat_key(payload: str) -> bool:
    """Whether the strict JSON ``payload`` may give a key twice in one object (false: it surely does not)."""
    if payload.count(":") < 2:
        return False
    try:
        jiter.from_json(payload.encode("utf-8", "surrogatepass"), catch_duplicate_keys=True, cache_mode="keys")
    except ValueError:  # a repeated key (or text jiter reads differently: let the stages decide)
        return True
    return False
