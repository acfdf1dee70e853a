"""How many of a contract's constraints reach the model, per vendor dialect and mode (not a speed benchmark).

    python bench/constraints_reach.py            # the table
    python bench/constraints_reach.py --missing  # also list each constraint that does not reach the model

For each route (endpoint, model, self-hosted server, forced mode) the contracts of ``tests/support/constrained.py``
(a pydantic ``Order`` and a JSON Schema ``Settings``) are asked for through the real SDK client pointed at the
emulator, and the request the SDK sent is read back: each constraint reaches the model as a keyword in a schema the
model is shown, enforced by a self-hosted decoder, or in words in the description of its field; else it is missing
(see ``guardrail/testing/reach.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the shared contracts (tests/support)

from support.constrained import CONTRACTS, ROUTES, measure

from guardrail.testing import Emulator


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--missing", action="store_true", help="list each constraint that does not reach the model")
    args = parser.parse_args()
    print(f"{'route':<34} {'reach':>7}  {'keyword':>7} {'enforced':>8} {'words':>5} {'missing':>7}")
    grand: Counter[str] = Counter()
    with Emulator() as emu:
        for route in ROUTES:
            counts: Counter[str] = Counter()
            missing: list[str] = []
            for name in CONTRACTS:
                for constraint, how in measure(emu, route, name).items():
                    counts[how] += 1
                    if how == "missing":
                        missing.append(f"{name}: {constraint}")
            total = sum(counts.values())
            grand.update(counts)
            print(f"{route.label:<34} {total - counts['missing']:>3}/{total:<3}  {counts['keyword']:>7} "
                  f"{counts['enforced']:>8} {counts['words']:>5} {counts['missing']:>7}")
            if args.missing:
                for line in missing:
                    print(f"    missing  {line}")
    total = sum(grand.values())
    print(f"{'ALL':<34} {total - grand['missing']:>3}/{total:<3}  {grand['keyword']:>7} {grand['enforced']:>8} "
          f"{grand['words']:>5} {grand['missing']:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
