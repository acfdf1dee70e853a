"""Which arm a call goes to: a stable share of traffic to the candidate.

With a routing key (a user id, a tenant, a conversation), the arm is a pure function of the canary's name and the
key: the key's BLAKE2b hash, read as a number in [0, 1), is below ``share``. The same key always lands on the same
arm, in every process and after a restart, and raising the share only moves keys *to* the candidate. Another
canary's name mixes in, so two experiments split the same users independently. Without a key each call draws from
a :class:`random.Random` (``seed=`` makes a run reproducible), behind a lock so threads share it safely.
"""

from __future__ import annotations

import hashlib
import random
import threading

from guardrail.errors import ConfigError, UsageError

__all__ = ["Router", "RoutingKey", "position"]

#: What a routing key may be: text, an integer or bytes (their value, never an object's ``repr``, is hashed).
RoutingKey = str | int | bytes


def position(salt: str, key: RoutingKey) -> float:
    """Where ``key`` falls in [0, 1) for the canary named ``salt`` (uniform over keys, stable everywhere)."""
    if isinstance(key, bool) or not isinstance(key, str | int | bytes):
        raise UsageError(f"a routing key is str, int or bytes, got {type(key).__name__}")
    data = key if isinstance(key, bytes) else (f"i:{key}" if isinstance(key, int) else f"s:{key}").encode()
    digest = hashlib.blake2b(data, digest_size=8, key=salt.encode()[:64]).digest()
    return int.from_bytes(digest, "big") / 2**64


class Router:
    """Picks the candidate for a ``share`` of calls: by key when one is given, else at random (see the module)."""

    def __init__(self, share: float, salt: str, seed: int | None = None) -> None:
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            raise ConfigError(f"share is the candidate's fraction of traffic in [0, 1], got {share!r}")
        self.share = float(share)
        self._salt = salt
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def to_candidate(self, key: RoutingKey | None) -> bool:
        """Whether this call (with routing ``key``, or none) goes to the candidate."""
        if key is None:
            with self._lock:
                draw = self._random.random()
        else:
            draw = position(self._salt, key)
        return draw < self.share
