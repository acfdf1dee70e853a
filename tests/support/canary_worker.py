"""A process that drives a canary over a shared store: ``python -m support.canary_worker KIND LOCATION PREFIX NAME
PAIRS MIN_SAMPLES`` opens the SQLite file (KIND ``sqlite``) or Redis server (``redis``, keys under PREFIX) and makes
PAIRS rounds of one control-keyed and one candidate-keyed call (keys from :func:`support.canary_arms.keys_for`),
the candidate failing every even round. It prints how many calls each arm answered, as JSON."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from itertools import islice

from support.canary_arms import keys_for

from guardrail.canary import Canary
from guardrail.errors import GuardrailError
from guardrail.store import RedisStore, SQLiteStore, Store

SHARE = 0.5


class Broken(GuardrailError):
    """The candidate's failure in these tests."""

    kind = "broken"


def control(n: int) -> str:
    return f"control {n}"


def candidate(n: int) -> str:
    if n % 2 == 0:
        raise Broken(f"case {n}")
    return f"candidate {n}"


@dataclass
class SharedStore:
    """Where a canary's counts are shared: a SQLite file, or a Redis server under a key prefix of this test.
    ``open()`` opens one more handle on it (closed after the test); a worker process opens its own from
    ``kind``, ``location`` and ``prefix``."""

    kind: str
    location: str
    prefix: str
    opened: list[Store] = field(default_factory=list)

    def open(self) -> Store:
        store: Store = SQLiteStore(self.location) if self.kind == "sqlite" else RedisStore(self.location,
                                                                                           prefix=self.prefix)
        self.opened.append(store)
        return store


def main() -> None:
    kind, location, prefix, name, pairs, min_samples = sys.argv[1:7]
    store = SharedStore(kind, location, prefix).open()
    canary = Canary(control, candidate, share=SHARE, store=store, name=name, margin=0.05, min_samples=int(min_samples))
    answered = {"control": 0, "candidate": 0, "failed": 0}
    rounds = zip(range(int(pairs)), islice(keys_for(name, SHARE, False), int(pairs)),
                 islice(keys_for(name, SHARE, True), int(pairs)), strict=False)
    for n, control_key, candidate_key in rounds:
        for key in (control_key, candidate_key):
            try:
                answered[canary.routed(key)(n).split()[0]] += 1
            except Broken:
                answered["failed"] += 1
    print(json.dumps(answered))
    store.close()


if __name__ == "__main__":
    main()
