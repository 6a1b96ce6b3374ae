#!/usr/bin/env bash
# Runs every fuzz target of tests/fuzz (the parsers of the configuration, the candidates file,
# the review, the outcome file, the agent's execution record, the dashboard issue's body, the
# Stop hook's decision, the workflow_run event payload and install-cli's version readers) for
# SECONDS_PER_TARGET seconds each, one at a time, and fails when any target crashes. Needs a
# nightly toolchain; cargo-fuzz (pinned) is installed into target/fuzz-tools/ when missing.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     default 20
#
# Seeds are tests/fuzz/seeds/<target>/ (committed); what a run learns goes to
# tests/fuzz/corpus/<target>/ and a crashing input to tests/fuzz/artifacts/<target>/ (both
# ignored by git). Reproduce a crash with
#   cargo +nightly fuzz run --fuzz-dir tests/fuzz <target> tests/fuzz/artifacts/<target>/<file>
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-20}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]" >&2
  exit 2
fi
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "scripts/fuzz.sh: cargo-fuzz needs a nightly toolchain (rustup toolchain install nightly)" >&2
  exit 1
fi

cargo_fuzz_version=0.13.1
tools="$PWD/target/fuzz-tools"
if ! "$tools/bin/cargo-fuzz" --version 2> /dev/null | grep -qF "$cargo_fuzz_version"; then
  echo "== installing cargo-fuzz $cargo_fuzz_version into $tools"
  cargo install cargo-fuzz --locked --version "$cargo_fuzz_version" --root "$tools"
fi
PATH="$tools/bin:$PATH"
export PATH

fuzz_dir=tests/fuzz
logs="$PWD/target/fuzz-logs"
mkdir -p "$logs"

echo "== building the fuzz targets"
cargo +nightly fuzz build --fuzz-dir "$fuzz_dir"

failed=()
for target in $(cargo +nightly fuzz list --fuzz-dir "$fuzz_dir"); do
  corpus="$fuzz_dir/corpus/$target"
  mkdir -p "$corpus"
  echo "== fuzzing $target for ${seconds}s"
  if cargo +nightly fuzz run --fuzz-dir "$fuzz_dir" "$target" "$corpus" "$fuzz_dir/seeds/$target" \
    -- -max_total_time="$seconds" -timeout=10 -print_final_stats=1 > "$logs/$target.log" 2>&1; then
    # The last status line: executions, coverage (cov) and features (ft) reached.
    grep -E '^#[0-9]+' "$logs/$target.log" | tail -n 1 || true
    grep -E '^stat::number_of_executed_units' "$logs/$target.log" || true
  else
    tail -n 40 "$logs/$target.log"
    echo "!! $target crashed; the input is in $fuzz_dir/artifacts/$target/ (log: $logs/$target.log)"
    failed+=("$target")
  fi
done

if ((${#failed[@]})); then
  echo "fuzzing found crashes in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzzing: no crash in any target (${seconds}s each)"
