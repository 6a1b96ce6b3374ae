#!/usr/bin/env python3
"""Checks that InferenceX's generator renders each family the same from the family's own block of
its master file (the excerpt `klaud discover` gives it) as from the whole file.

Usage: scripts/check-excerpt-renderings.py CHECKOUT [RECORDED] [JOBS]
  CHECKOUT  an InferenceX checkout at the recorded commit, its Python dependencies installed
  RECORDED  the whole-file renderings (default tests/fixtures/discovery/generator-843c6254f.json)
  JOBS      renderings at once (default 2)

An excerpt is the lines from a top-level key's line (one that starts with neither whitespace nor
`#`) up to the next such line, as klaud cuts them. Prints how many families render the same and
exits 1 when any differs or fails. Downloads nothing.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor


def excerpts(text):
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line[:1] and not line[:1].isspace() and line[0] != "#"]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        block = "".join(lines[start:end])
        key = lines[start].split(":", 1)[0].strip().strip("\"'")
        yield key, block


def main(argv):
    checkout = argv[1]
    recorded_path = argv[2] if len(argv) > 2 else "tests/fixtures/discovery/generator-843c6254f.json"
    jobs = int(argv[3]) if len(argv) > 3 else 2
    with open(recorded_path, encoding="utf-8") as handle:
        recorded = json.load(handle)
    runner_config = recorded["runner-config"]
    work = tempfile.mkdtemp(prefix="excerpts-")
    tasks = []
    for name in sorted(recorded["families"]):
        file, key = name.rsplit(":", 1)
        with open(os.path.join(checkout, file), encoding="utf-8") as handle:
            blocks = dict(excerpts(handle.read()))
        path = os.path.join(work, f"{len(tasks)}.yaml")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(blocks[key])
        tasks.append((name, key, path))

    def render(task):
        name, key, path = task
        run = subprocess.run(
            [sys.executable, "utils/matrix_logic/generate_sweep_configs.py", "test-config",
             "--config-keys", key, "--config-files", path, "--runner-config", runner_config],
            cwd=checkout, capture_output=True, text=True)
        if run.returncode != 0:
            return name, f"exit {run.returncode}: {run.stderr.strip().splitlines()[-1:]}"
        want = recorded["families"][name].get("entries")
        got = json.loads(run.stdout)
        canonical = lambda entries: [json.dumps(e, sort_keys=True) for e in entries]
        return name, "same" if canonical(got) == canonical(want) else "differs"

    started = time.time()
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(render, tasks))
    same = sum(1 for _, verdict in results if verdict == "same")
    print(f"{same} of {len(results)} families render the same from their excerpt "
          f"({time.time() - started:.1f} s, {jobs} at once)")
    for name, verdict in results:
        if verdict != "same":
            print(f"  {name}: {verdict}")
    return 0 if same == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
