"""Schema coverage of the llguidance grammar on MaskBench (JSONSchemaBench): counts per collection.

    python bench/maskbench_coverage.py                  # every schema and instance (under a minute on 2 cores)
    python bench/maskbench_coverage.py --sample 50      # at most 50 schemas per collection, spread evenly
    python bench/maskbench_coverage.py --mismatches     # also list each unexplained mismatch

For each schema: compile it as a contract (or say why not); for each test instance: write it as the decoder
would (compact JSON, keys in the grammar's order), tokenize it with a small trained BPE tokenizer, feed the
tokens to an ``llguidance.LLMatcher`` and check it accepts at the end. A valid instance the grammar rejects,
or an invalid one it accepts, must be explained by the compile report (a keyword lowered or left to
post-validation, and post-validation catching it); see ``bench/maskbench_harness.py``. The corpus is looked
up as ``$GUARDRAIL_CORPORA/maskbench`` or ``../shared/corpora/maskbench``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from maskbench_harness import Counts, coverage, table

from guardrail.testing.corpora import find_corpus, load
from guardrail.testing.tiny import train_tokenizer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=None, help="the maskbench directory")
    parser.add_argument("--sample", type=int, default=None, help="at most this many schemas per collection")
    parser.add_argument("--mismatches", action="store_true", help="list every unexplained mismatch")
    args = parser.parse_args()
    corpus = args.corpus or find_corpus()
    if corpus is None:
        print("MaskBench corpus not found (set GUARDRAIL_CORPORA)", file=sys.stderr)
        return 2
    entries = load(corpus)
    tokenizer = train_tokenizer()
    started = time.perf_counter()
    results = coverage(entries, tokenizer, sample=args.sample)
    seconds = time.perf_counter() - started
    print(table(results))
    total = Counts()
    for counts in results.values():
        total.add(counts)
    print(f"\n{sum(c.schemas for c in results.values())} schemas in {seconds:.1f} s "
          f"(tokenizer: byte-level BPE, {len(tokenizer)} tokens)")
    print("\nrejected schemas by reason:")
    for reason, n in Counter(total.rejected_by).most_common():
        print(f"  {n:5d}  {reason}")
    print("\nmismatches explained by keyword (lowered or post-validated in the report):")
    for keyword, n in Counter(total.explained_by).most_common():
        print(f"  {n:5d}  {keyword}")
    print(f"\nunexplained mismatches: {total.unexplained}")
    if args.mismatches:
        for m in total.mismatches:
            print(f"  {m.schema_id}  valid={m.valid}  {m.why}\n      {m.text[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
