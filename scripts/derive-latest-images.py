#!/usr/bin/env python3
"""Derives tests/fixtures/discovery/latest-images-derived.json: a `latest-images` catalog as the
public API builds it (one row per model, hardware, framework, precision, spec_method,
benchmark_type, isl, osl: its newest image and date), from real data:

- the real generator's entries at 843c6254f (tests/fixtures/discovery/generator-843c6254f.json),
  spelled as the dashboard's ETL publishes them, dated 2026-08-21 (that commit's date), one row
  per distinct observation;
- the real benchmark rows in tests/fixtures/inferencex/public/ (their own images and dates);
- four rows made invalid on purpose (a missing field, a wrong type, an unreadable date, not an
  object) and one row that no family matches.

The observation rules are written here independently of klaud's code, so that the tests compare
two computations. Run from the repository root; the output is deterministic.
"""

import json
import os

SPELLINGS = {
    "framework": {"sglang-disagg": "mori-sglang", "atom-disagg": "mooncake-atom",
                  "dynamo-trtllm": "dynamo-trt", "trtllm": "trt"},
    "precision": {"nvfp4": "fp4", "mxfp4": "fp4"},
    "model": {"gptoss": "gptoss120b", "dsv4pro": "dsv4"},
}
DATE = "2026-08-21"


def published(entry):
    runner = entry["runner"]
    if runner.startswith("cluster:"):
        runner = runner[len("cluster:"):]
    framework = SPELLINGS["framework"].get(entry["framework"], entry["framework"])
    disagg = entry.get("disagg")
    if disagg is None:
        disagg = framework.startswith("mori-")
    agentic = entry.get("scenario-type") == "agentic-coding"
    return {
        "model": SPELLINGS["model"].get(entry["model-prefix"], entry["model-prefix"]),
        "hardware": runner.split("-")[0],
        "framework": framework,
        "precision": SPELLINGS["precision"].get(entry["precision"], entry["precision"]),
        "spec_method": entry.get("spec-decoding") or "none",
        "disagg": disagg,
        "benchmark_type": "agentic_traces" if agentic else "single_turn",
        "isl": None if agentic else entry["isl"],
        "osl": None if agentic else entry["osl"],
        # The images feed publishes images as the runs recorded them (enroot's `#` included).
        "image": entry["image"],
        "date": DATE,
    }


def main():
    with open("tests/fixtures/discovery/generator-843c6254f.json", encoding="utf-8") as handle:
        families = json.load(handle)["families"]
    rows = {}
    for name in sorted(families):
        for entry in families[name].get("entries", []):
            row = published(entry)
            key = tuple(row[f] for f in ("model", "hardware", "framework", "precision",
                                         "spec_method", "benchmark_type", "isl", "osl"))
            rows.setdefault(key, row)
    catalog = list(rows.values())
    public = "tests/fixtures/inferencex/public"
    for name in sorted(os.listdir(public)):
        if not name.startswith("benchmarks-"):
            continue
        with open(os.path.join(public, name), encoding="utf-8") as handle:
            for real in json.load(handle):
                row = {field: real.get(field) for field in (
                    "model", "hardware", "framework", "precision", "spec_method", "disagg",
                    "isl", "osl", "image", "date")}
                row["benchmark_type"] = real.get("benchmark_type", "single_turn")
                key = tuple(row[f] for f in ("model", "hardware", "framework", "precision",
                                             "spec_method", "benchmark_type", "isl", "osl"))
                if key not in rows:
                    rows[key] = row
                    catalog.append(row)
    catalog.append({"model": "dsr1", "hardware": "b300", "framework": "vllm",
                    "precision": "fp8", "spec_method": "none", "disagg": False,
                    "benchmark_type": "single_turn", "isl": 4096, "osl": 512,
                    "image": "vllm/vllm-openai:v9.9.9", "date": DATE})
    invalid = dict(catalog[0])
    del invalid["image"]
    catalog.append(invalid)
    wrong = dict(catalog[1])
    wrong["disagg"] = 0
    catalog.append(wrong)
    undated = dict(catalog[2])
    undated["date"] = "21 August 2026"
    catalog.append(undated)
    catalog.append(["not", "a", "row"])
    with open("tests/fixtures/discovery/latest-images-derived.json", "w",
              encoding="utf-8") as handle:
        json.dump(catalog, handle, indent=1)
        handle.write("\n")
    print(f"{len(catalog)} rows")


if __name__ == "__main__":
    main()
