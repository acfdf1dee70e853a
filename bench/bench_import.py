"""Import cost: ``import guardrail`` against ``import openai``, each in a fresh interpreter, side by side.

Prints the median wall time of each (over ``--runs`` fresh processes, alternating so both see the same machine
state), the bare interpreter start-up that both include, and the ratio of what each import adds over that
start-up. Target (issue 13): ``import guardrail`` <= 0.35x ``import openai``. Also reports the first use of the
wrapper and the parser (``from guardrail import wrap, parse, structured``), which loads the vendor layer.

    python bench/bench_import.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "python (start-up only)": "pass",
    "import openai": "import openai",
    "import guardrail": "import guardrail",
    "from guardrail import wrap, parse, structured": "from guardrail import wrap, parse, structured",
    "import instructor": "import instructor",
}


def once(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for code in CASES.values():  # warm the file cache once
        once(code)
    for _ in range(runs):
        for name, code in CASES.items():
            times[name].append(once(code))
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["python (start-up only)"]
    openai_cost = medians["import openai"] - base
    print(f"{'case':50} {'median':>9} {'added':>9} {'vs openai':>10}")
    for name, median in medians.items():
        added = median - base
        ratio = "" if name.startswith("python") else f"{added / openai_cost:9.2f}x"
        print(f"{name:50} {median * 1000:7.1f}ms {added * 1000:7.1f}ms {ratio:>10}")
    ratio = (medians["import guardrail"] - base) / openai_cost
    print(f"\nimport guardrail / import openai (start-up subtracted): {ratio:.2f}x (target <= 0.35x)")


if __name__ == "__main__":
    main()
