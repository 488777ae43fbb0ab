#!/usr/bin/env python3
"""Generate note/testdata/pyyaml_golden.jsonl from the real PyYAML.

The Go frontmatter writer must emit byte-for-byte what the Python anamnesis
writer emits (yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)).
This script records PyYAML's answer for a fixed set of tricky values plus a
seeded random sample; the Go test replays them. Re-run it only to extend the
vectors: python3 scripts/gen_yaml_golden.py > note/testdata/pyyaml_golden.jsonl
"""
import json
import random
import sys

import yaml

FIXED = [
    "plain", "Use WAL mode for SQLite", "", " ", "  ", "yes", "No", "ON", "off", "true", "False",
    "null", "Null", "~", "1", "-1", "+1", "0x1F", "0o17", "017", "0b101", "1_000", "1.0", ".5", "1e5",
    "1.0e5", ".inf", "-.Inf", ".nan", "12:30", "1:2:3", "190:20:30.15", "2026-11-22",
    "2026-11-22T00:06:32+00:00", "2026-1-2 3:04:05", "2001-12-14t21:59:43.10-05:00", "=", "<<", "!",
    "&", "*", "a: b", "a:b", "a:", "key:", "a #b", "a#b", "#c", "- dash", "-dash", "-", "--", "---x",
    "...x", "? q", "?q", ": c", ":c", "[x", "x]", "{x", "x}", "a,b", ",a", "'q'", "\"q\"", "it's",
    "%p", "@a", "`b`", "|p", ">p", "a|b", "tab\there", "nl\nhere", "nl\n\nhere", "end\n", "\nstart",
    " lead", "trail ", "a \nb", "a\n b", "cr\rhere", "crlf\r\nhere", "nul\x00", "bell\x07", "esc\x1b",
    "del\x7f", "nbsp\xa0x", "\x85next", "ls\u2028ps\u2029", "bom\ufeffx", "\ufeff", "naïve café",
    "日本語", "emoji 🚀 here", "🚀", "\ud7ff\ue000\ufffd", "Grüße aus München.",
    "Deploy: run `make release` then tag v1.2.3 # not a comment", "It's \"quoted\" and 'single'",
    "A very long session title that goes on and on beyond eighty characters so that a YAML writer may fold it onto a second line",
    "x" * 100, "word " * 30, ("word " * 30).strip(), "a" * 79 + " b", "a" * 80 + " b" + " c" * 10,
    "'" * 90, ("it's " * 25).strip(), ("tab\t" * 30), ("ü" * 40 + " ") * 4, "a  b  c " * 15,
    ("long: title with a colon " * 5).strip(), ("emoji 🚀 " * 20).strip(), ("line one\n" * 5) + "end",
    "double space  " * 10 + "x", "x" + " " * 100 + "y", "\\back\\slash", "a\\b: c",
]

# Characters that exercise every branch of PyYAML's scalar analysis.
ALPHABET = list("abcXYZ019 -_:#,?[]{}&*!|>'\"%@`.~=<+\\/") + [
    "\t", "\n", "\r", "\x00", "\x1f", "\x7f", "\x85", "\xa0", "é", "ß", "\u2028", "\ufeff",
    "\ue000", "日", "🚀", "  ",
]


def sample(rng):
    n = rng.choice([1, 2, 3, 5, 8, 13, 40, 85, 120, 200])
    if rng.random() < 0.5:
        # mostly words, like real titles
        words = [rng.choice(["note", "sqlite", "it's", "a:", "#x", "-", "yes", "12:30", "x" * rng.randint(1, 30), "é日", "🚀"]) for _ in range(n // 3 + 1)]
        return " ".join(words)
    return "".join(rng.choice(ALPHABET) for _ in range(n))


FLOATS = [1.0, 0.6, 0.75, 0.8, 0.0, 0.5, 0.1 + 0.2, 1e-07, 1.5e-07, 0.0001, 0.00001, 1e16, 1e15,
          123456.789, 1.2345678901234567e+17, 5e-324, 2.5, 100.0, 0.3]


def main():
    rng = random.Random(20261122)
    cases = []
    for s in FIXED:
        cases.append({"title": s, "project": "demo", "tags": [], "confidence": 1.0})
        cases.append({"title": "t", "project": s, "tags": [s, "x"], "confidence": 1.0})
    for f in FLOATS:
        cases.append({"title": "f", "project": "global", "tags": ["a"], "confidence": f})
    for _ in range(1000):
        cases.append({
            "title": sample(rng),
            "project": sample(rng) if rng.random() < 0.3 else "global",
            "tags": [sample(rng) for _ in range(rng.randint(0, 3))],
            "confidence": rng.choice(FLOATS),
        })
    out = sys.stdout
    for c in cases:
        meta = {
            "id": "01M8096W5Y5VJW7T5A4YN4196Z",
            "type": "semantic",
            "title": c["title"],
            "project": c["project"],
            "machine_id": "desk",
            "scope": "portable",
            "user_id": "self",
            "workspace_id": "personal",
            "prov_source": "human",
            "confidence": c["confidence"],
            "created_at": "2026-11-22T00:06:32+00:00",
            "updated_at": "2026-11-22T00:06:32+00:00",
            "tags": c["tags"],
        }
        c["yaml"] = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
        out.write(json.dumps(c, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main()
