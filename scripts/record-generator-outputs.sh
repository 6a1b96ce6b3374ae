#!/usr/bin/env bash
# Records what InferenceX's own matrix generator prints for every family at
# commit 843c6254f, into tests/fixtures/discovery/generator-843c6254f.json.
#
# A family is a top-level key of configs/amd-master.yaml or
# configs/nvidia-master.yaml. For each one the generator is run once, from the
# checkout's root, as
#
#   python3 utils/matrix_logic/generate_sweep_configs.py test-config \
#     --config-keys KEY --config-files FILE --runner-config configs/runners.yaml
#
# with FILE the one master file that holds KEY (evals are left on: no
# --no-evals). The exit code is recorded, with the parsed stdout (the entries
# array) when it is 0 and the last non-empty stderr line otherwise.
#
# Usage: scripts/record-generator-outputs.sh INFERENCEX_CHECKOUT [OUTPUT]
#   INFERENCEX_CHECKOUT  a checkout (or `git archive` extract) of InferenceX at
#                        843c6254ff69b567f772f6a5fd97675af3d04431
#   OUTPUT               defaults to tests/fixtures/discovery/generator-843c6254f.json
#                        in the repository that holds this script
# Environment:
#   PYTHON  the interpreter that runs the generator and this recorder; it needs
#           pydantic and PyYAML (default: python3)
#   JOBS    generator runs at once (default: 1)
#
# Before recording, the checkout's configs must equal
# tests/fixtures/inferencex/configs/full-843c6254f/*.yaml byte for byte, and the
# generator run with both master files for dsv4-fp4-b200-vllm must give the
# entries of tests/fixtures/inferencex/producer/newest-843c6254f_sn_dsv4-fp4-b200-vllm.json.
#
# Nothing is downloaded: install pydantic and PyYAML beforehand, for instance
#   python3 -m venv "$CHECKOUT/.venv" && "$CHECKOUT/.venv/bin/pip" install pydantic pyyaml
#   PYTHON="$CHECKOUT/.venv/bin/python" scripts/record-generator-outputs.sh "$CHECKOUT"
set -euo pipefail

COMMIT=843c6254ff69b567f772f6a5fd97675af3d04431

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
fi

checkout=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
output=${2:-$here/../tests/fixtures/discovery/generator-843c6254f.json}
python=${PYTHON:-python3}
jobs=${JOBS:-1}

for f in utils/matrix_logic/generate_sweep_configs.py configs/amd-master.yaml \
         configs/nvidia-master.yaml configs/runners.yaml; do
    if [ ! -f "$checkout/$f" ]; then
        echo "$checkout has no $f: not an InferenceX checkout" >&2
        exit 1
    fi
done

# A git checkout must be at the commit; an extract without .git is taken as is.
if top=$(git -C "$checkout" rev-parse --show-toplevel 2>/dev/null) \
        && [ "$(cd "$top" && pwd)" = "$checkout" ]; then
    head=$(git -C "$checkout" rev-parse HEAD)
    if [ "$head" != "$COMMIT" ]; then
        echo "$checkout is at $head, not $COMMIT" >&2
        exit 1
    fi
fi

fixtures=$here/../tests/fixtures/inferencex
for f in amd-master.yaml nvidia-master.yaml runners.yaml; do
    if ! cmp -s "$fixtures/configs/full-843c6254f/$f" "$checkout/configs/$f"; then
        echo "configs/$f differs from tests/fixtures/inferencex/configs/full-843c6254f/$f" >&2
        exit 1
    fi
done
(cd "$checkout" && "$python" utils/matrix_logic/generate_sweep_configs.py test-config \
    --config-keys dsv4-fp4-b200-vllm \
    --config-files configs/amd-master.yaml configs/nvidia-master.yaml) |
    "$python" -c 'import json, sys
if json.load(sys.stdin) != json.load(open(sys.argv[1])):
    sys.exit("the generator does not reproduce " + sys.argv[1])' \
    "$fixtures/producer/newest-843c6254f_sn_dsv4-fp4-b200-vllm.json"
echo "configs and the recorded dsv4-fp4-b200-vllm run match tests/fixtures/inferencex" >&2

exec "$python" - "$checkout" "$output" "$COMMIT" "$jobs" <<'PY'
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version

import yaml

checkout, output, commit, jobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
runner_config = "configs/runners.yaml"
master_files = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"]

families = []
for master in master_files:
    with open(os.path.join(checkout, master)) as f:
        data = yaml.safe_load(f)
    families += [(master, key) for key in data]


def run(family):
    master, key = family
    argv = [
        sys.executable, "utils/matrix_logic/generate_sweep_configs.py", "test-config",
        "--config-keys", key,
        "--config-files", master,
        "--runner-config", runner_config,
    ]
    proc = subprocess.run(argv, cwd=checkout, capture_output=True, text=True)
    if proc.returncode == 0:
        return {"exit": 0, "entries": json.loads(proc.stdout)}
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    return {"exit": proc.returncode, "stderr-last-line": lines[-1] if lines else ""}


with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
    results = list(pool.map(run, families))

record = {
    "commit": commit,
    "runner-config": runner_config,
    "families": {f"{master}:{key}": result for (master, key), result in zip(families, results)},
}
os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
with open(output, "w") as f:
    f.write(json.dumps(record, separators=(",", ":"), sort_keys=True))
    f.write("\n")

failed = sum(1 for r in results if r["exit"] != 0)
print(
    f"{len(families)} families ({failed} failed), "
    f"{sum(len(r.get('entries', [])) for r in results)} entries -> {output}\n"
    f"python {sys.version.split()[0]}, pydantic {version('pydantic')}, PyYAML {version('PyYAML')}",
    file=sys.stderr,
)
PY
