"""JSON Schema contracts on MaskBench (JSONSchemaBench): agreement with the reference validator, per collection.

    python bench/maskbench_jsonschema.py               # every schema and instance (about a minute on 2 cores)
    python bench/maskbench_jsonschema.py --sample 50   # at most 50 schemas per collection, spread evenly

Each schema is compiled as a guardrail contract; each instance, written as JSON text, is judged by the
contract's validator and by ``guardrail.parse_report``, and compared with the reference ``jsonschema`` validator
(formats asserted). Columns: see ``guardrail/testing/jsonschema_agreement.py``. The bar (issue 14): agreement
within 1%, no altered valid instance, wrong accepts no more than the disagreements, >= 97% of schemas supported.
The corpus is looked up as ``$GUARDRAIL_CORPORA/maskbench`` or ``../shared/corpora/maskbench``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from guardrail.testing.corpora import find_corpus, load
from guardrail.testing.jsonschema_agreement import measure, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=None, help="the maskbench directory")
    parser.add_argument("--sample", type=int, default=None, help="at most this many schemas per collection")
    args = parser.parse_args()
    corpus = args.corpus or find_corpus()
    if corpus is None:
        print("MaskBench corpus not found (set GUARDRAIL_CORPORA)", file=sys.stderr)
        return 2
    entries = load(corpus)
    if args.sample:
        entries = {name: items[:: max(1, len(items) // args.sample)][: args.sample] for name, items in entries.items()}
    started = time.perf_counter()
    print(table(measure(entries)))
    print(f"\n{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
