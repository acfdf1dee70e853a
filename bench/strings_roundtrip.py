"""Round-trip check of string content: valid JSON values whose strings hold code, markdown and markers.

    python bench/strings_roundtrip.py            # 3000 values, each in 21 shapes
    python bench/strings_roundtrip.py --n 500    # fewer

Each value is a JSON object or array (seeded, reproducible) whose strings are drawn from what models put in
string values: code with braces and comments, markdown with fences, HTML and SQL with quotes, backslashes,
``//`` and ``#``, ``<think>``, ``Here is the JSON:``, JSON written inside a string. It is dumped with
``json.dumps`` (compact or indented), then also with each ``\\n`` escape inside a string written as a raw
newline (what models often do), and with raw newlines, tabs and carriage returns; each is wrapped seven ways:
bare, in a ```json fence, in prose lines before and after, in prose around a fence, in prose on the same
line, in a ``<json>`` tag, and after a ``<think>`` block in a bare fence. ``guardrail.parse(text, Any)``
must give the original value back.

Prints, per dump style (escaped / raw newlines / raw newlines, tabs and returns): how many came back
unchanged, how many came back as a *different value* (the worst outcome), how many were reported truncated
(the texts are complete), and other errors; then the first failures of each kind. Not a test: nothing here
asserts. Read the table.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import guardrail
from guardrail.errors import ParseError, TruncatedJSONError

#: What models put in strings: code, markdown, markup, and the markers a reader of chatty text looks for.
PIECES = [
    "```python\ndef f(x):\n    return {'a': x}\n```",
    "```c\nint main() {\n    return 0;\n}\n```",
    "```json\n{\"a\": 1, \"b\": [1, 2]}\n```",
    "```\nplain block\n```",
    "~~~\ntilde block\n~~~",
    "```js\nconst o = {a: 1}; // note\n```",
    "int main() {\n}",
    "if (x) { y(); }",
    "{",
    "}",
    "[",
    "]",
    "{}",
    "[1, 2]",
    "{\"nested\": \"json\"}",
    "<div class=\"x\">hi</div>",
    "SELECT * FROM t WHERE a = \"b\";",
    "C:\\Users\\me\\file.txt",
    "a\\nb",
    "\\",
    "\"",
    "say \"hi\" to her",
    "// a comment",
    "# a heading\n\n- item\n- item",
    "/* block */",
    "<think>reasoning here</think>",
    "<think>",
    "</think>",
    "Here is the JSON:",
    "Here is the JSON:\n{\"a\": 1}",
    "Sure! Here you go.",
    "```",
    "~~~",
    "line one\nline two",
    "\n",
    "tab\there",
    "key: value",
    "\"a\": 1,",
    "], \"b\": [",
    "}, {",
    "true",
    "null",
    "42",
    "é 한국어 \U0001f600",
    "'single'",
    "`tick`",
    "<json>{}</json>",
]
KEYS = ["code", "text", "a", "b", "summary", "html", "sql", "path", "notes", "answer", "key"]


def random_string(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) + rng.choice(["", " ", "\n", "\n\n"]) for _ in range(rng.randint(1, 4)))


def random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 3 or roll < 0.55:
        scalar = rng.random()
        if scalar < 0.8:
            return random_string(rng)
        return rng.choice([1, -2.5, True, False, None, 0])
    if roll < 0.8:
        return {rng.choice(KEYS) + str(i): random_value(rng, depth + 1) for i in range(rng.randint(0, 4))}
    return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def random_root(rng: random.Random) -> Any:
    if rng.random() < 0.8:
        return {rng.choice(KEYS) + str(i): random_value(rng, 1) for i in range(rng.randint(1, 4))}
    return [random_value(rng, 1) for _ in range(rng.randint(1, 4))]


_STRING: re.Pattern[str] = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_ESCAPE: re.Pattern[str] = re.compile(r"\\(.)", re.S)


def raw_escapes(dumped: str, raw: dict[str, str]) -> str:
    """``dumped`` with the escapes named in ``raw`` (``{"n": "\\n"}``) inside its strings written as the raw
    characters (every other escape kept)."""
    def one_string(m: re.Match[str]) -> str:
        return _ESCAPE.sub(lambda e: raw.get(e.group(1), e.group(0)), m.group(0))

    return _STRING.sub(one_string, dumped)


STYLES: dict[str, Callable[[str], str]] = {
    "escaped": lambda s: s,
    "raw newlines": lambda s: raw_escapes(s, {"n": "\n"}),
    "raw nl+tabs": lambda s: raw_escapes(s, {"n": "\n", "t": "\t", "r": "\r"}),
}


WRAPS: dict[str, Callable[[str], str]] = {
    "bare": lambda s: s,
    "fenced": lambda s: f"```json\n{s}\n```",
    "prose": lambda s: f"Here is the JSON you asked for:\n{s}\nLet me know if you need anything else.",
    "prose+fence": lambda s: f"Sure! The result is below.\n\n```json\n{s}\n```\n\nI hope this helps.",
    "inline prose": lambda s: f"Here is the JSON: {s} Hope this helps!",
    "tag": lambda s: f"<json>{s}</json>",
    "think+fence": lambda s: f"<think>\nThe user wants JSON.\n</think>\n```\n{s}\n```",
}


def same_json(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def outcome(text: str, value: Any) -> str:
    try:
        got = guardrail.parse(text, Any)
    except TruncatedJSONError:
        return "truncated"
    except ParseError as error:
        return f"error:{error.kind}"
    return "unchanged" if same_json(got, value) else "DIFFERENT VALUE"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=3000, help="values to generate")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--show", type=int, default=3, help="failures to print per kind")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    counts: dict[str, Counter[str]] = {style: Counter() for style in STYLES}
    shown: Counter[tuple[str, str]] = Counter()
    for _ in range(args.n):
        value = random_root(rng)
        dumped = json.dumps(value, indent=rng.choice([None, 2]), ensure_ascii=rng.random() < 0.5)
        for style, dump in STYLES.items():
            body = dump(dumped)
            for wrap_name, wrap in WRAPS.items():
                text = wrap(body)
                result = outcome(text, value)
                counts[style][result] += 1
                if result != "unchanged" and shown[style, result] < args.show:
                    shown[style, result] += 1
                    print(f"[{style} / {wrap_name} / {result}] {text[:300]!r}")
    print()
    print(f"{'dump':<14}{'texts':>7}{'unchanged':>11}{'different':>11}{'truncated':>11}{'other err':>11}")
    for style, c in counts.items():
        total = sum(c.values())
        other = total - c["unchanged"] - c["DIFFERENT VALUE"] - c["truncated"]
        print(f"{style:<14}{total:>7}{c['unchanged'] / total:>11.2%}{c['DIFFERENT VALUE'] / total:>11.2%}"
              f"{c['truncated'] / total:>11.2%}{other / total:>11.2%}")
        errors = {k: v for k, v in c.items() if k.startswith("error:")}
        if errors:
            print(f"{'':<14}other errors: {errors}")


if __name__ == "__main__":
    main()
