#!/usr/bin/env bash
# Produces every figure of BENCHMARKS.md, one after another (never two release builds at once):
#
#   scripts/bench-all.sh            all figures, including the cold build from source (~7 min on 2 cores)
#   scripts/bench-all.sh --quick    skip the cold build from source
#
# Output goes to stdout and to target/bench-all/ (one file per figure).
set -euo pipefail

repository="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
out="$repository/target/bench-all"
mkdir -p "$out"
cd "$repository"

section() { printf '\n== %s\n' "$*"; }

section machine
{
  echo "nproc: $(nproc)"
  free -h
  grep -m 1 'model name' /proc/cpuinfo
  (. /etc/os-release && echo "OS: $PRETTY_NAME, kernel $(uname -r)")
  rustc --version
} | tee "$out/machine.txt"

section "dist binary (glibc 2.17, scripts/build-dist.sh)"
scripts/build-dist.sh 2>&1 | tee "$out/build-dist.txt"

section "binary sizes"
cargo build --release --locked --bin klaud
wc -c dist/*/klaud target/release/klaud | tee "$out/sizes.txt"

section "cold start with the prebuilt binary: action.yml's resolve step, 21 runs"
# The resolve step's script, taken from action.yml as it stands (scripts/resolve-binary.sh dist):
# checksum, version and source fingerprint (scripts/source-fingerprint.sh) of the dist/ binary
# just built from these sources.
resolve="$out/resolve.sh"
sed -n '/^      id: resolve$/,/^    - name: /p' action.yml | sed -n 's/^      run: //p' > "$resolve"
[ -s "$resolve" ] || {
  echo "no one-line run: in action.yml's resolve step" >&2
  exit 1
}
for _ in $(seq 1 21); do
  started=$(date +%s%N)
  GITHUB_ACTION_PATH="$repository/" GITHUB_OUTPUT=/dev/null RUNNER_TEMP="$out/runner-temp" \
    bash "$resolve" > "$out/resolve.log"
  echo $((($(date +%s%N) - started) / 1000000))
done | sort -n > "$out/resolve-ms.txt"
grep -q 'using the prebuilt' "$out/resolve.log" || {
  echo "the resolve step did not pick the prebuilt binary:" >&2
  cat "$out/resolve.log" >&2
  exit 1
}
echo "median: $(sed -n 11p "$out/resolve-ms.txt") ms (min $(head -n 1 "$out/resolve-ms.txt"), max $(tail -n 1 "$out/resolve-ms.txt"))" |
  tee "$out/resolve.txt"

section "benches (release profile)"
cargo bench --locked --no-run
cargo bench --locked --bench recover | tee "$out/recover.txt"
cargo bench --locked --bench select | tee "$out/select.txt"
cargo bench --locked --bench session | tee "$out/session.txt"
cargo bench --locked --bench dashboard | tee "$out/dashboard.txt"
cargo bench --locked --bench verify_baselines | tee "$out/verify_baselines.txt"
cargo bench --locked --bench discover | tee "$out/discover.txt"
cargo bench --locked --bench discover_issues | tee "$out/discover_issues.txt"
cargo bench --locked --bench scale | tee "$out/scale.txt"
cargo bench --locked --bench day | tee "$out/day.txt"

# recover.txt ends with the standalone figures: the real `klaud recover` as a child process, its
# own peak RSS (wait4), requests and wall time at 0 and 100 ms.
section "peak RSS of the whole recover bench process (fake GitHub + scenario + every pass; the in-process pass figures are in the notes of recover.txt)"
recover_bench="$(ls -t target/release/deps/recover-* | grep -v '\.d$' | head -n 1)"
/usr/bin/time -v "$recover_bench" --bench 2> "$out/recover-time.txt" > /dev/null
grep -E 'Maximum resident|Elapsed' "$out/recover-time.txt"

if [ "${1-}" != --quick ]; then
  section "cold build from source (action.yml's fallback) into a fresh target directory"
  fresh="$(mktemp -d)"
  /usr/bin/time -f '%e s wall, %M KiB peak RSS' \
    env CARGO_TARGET_DIR="$fresh" cargo build --profile fallback --locked --quiet 2>&1 | tee "$out/cold-build.txt"
  rm -rf "$fresh"
fi
