#!/usr/bin/env bash
# Finds the klaud binary action.yml runs; its steps call this script in two phases.
#
#   resolve-binary.sh dist    the prebuilt dist/<target>/klaud, when its checksum matches
#                             dist/SHA256SUMS and it is trusted (below). Otherwise names the cache
#                             entry of a build of these sources: outputs cache-key (the prefix the
#                             restore step matches), cache-save-key (this run's entry) and
#                             cache-path, after removing whatever a former job left there.
#   resolve-binary.sh cache   after the cache restore step: the restored binary when it is trusted,
#                             else (nothing restored, or an entry that is not trusted, which is
#                             discarded) a `cargo build --profile fallback --locked` of the action's
#                             sources (Cargo.toml's profile for this build),
#                             copied to cache-path with output save=true for the save step.
#
# A binary is trusted when `klaud --version` reports the crate's version on its first line and
# the source fingerprint of the action's checkout (scripts/source-fingerprint.sh) on its
# `source-fingerprint` line: the one rule for dist/ and the cache alike (`untrusted_because`).
#
# One cache entry per (source fingerprint, target triple, toolchain): the key is
# klaud-<version>-<target>-rust-<release>-<commit>-<fingerprint>, and each saving run appends its
# run id and attempt, so a rebuild after a discarded entry is saved as a newer entry (a cache key
# cannot be written twice) which the next restore prefers.
#
# Reads GITHUB_ACTION_PATH, GITHUB_OUTPUT, RUNNER_TEMP, RUNNER_OS, RUNNER_ARCH, HOME,
# GITHUB_RUN_ID and GITHUB_RUN_ATTEMPT; the cache phase also KLAUD_DIST_REASON (the dist phase's reason) and
# KLAUD_CACHE_MATCHED_KEY (the restore step's cache-matched-key, empty on a miss).
set -euo pipefail

action_path="${GITHUB_ACTION_PATH%/}"
crate_version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$action_path/Cargo.toml" | head -n 1)"
# The runner's OS and architecture (runner.os, runner.arch: X64, ARM64, ...), else uname's.
case "${RUNNER_OS:-$(uname -s)}-${RUNNER_ARCH:-$(uname -m)}" in
  Linux-X64 | Linux-x86_64) target=x86_64-unknown-linux-gnu ;;
  Linux-ARM64 | Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-gnu ;;
  macOS-ARM64 | Darwin-arm64) target=aarch64-apple-darwin ;;
  *) target="" ;;
esac

output() { printf '%s=%s\n' "$1" "$2" >> "$GITHUB_OUTPUT"; }

sha256_of() {
  if command -v sha256sum > /dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d ' ' -f 1
}

# The fingerprint of the action's sources, empty when it cannot be computed.
sources="$(bash "$action_path/scripts/source-fingerprint.sh" "$action_path")" || sources=""

# Prints why BINARY (called LABEL in the message) must not run, or nothing when it is trusted.
untrusted_because() {
  local binary="$1" label="$2" reported built_from="" line
  # --version prints `klaud <version>`, then `source-fingerprint <sha256>`: the sources the
  # binary was built from (build.rs), to compare with this checkout's.
  reported="$("$binary" --version 2> /dev/null || true)"
  while IFS= read -r line; do
    case "$line" in "source-fingerprint "*) built_from="${line#source-fingerprint }" ;; esac
  done <<< "$reported"
  if [ "${reported%%$'\n'*}" != "klaud $crate_version" ]; then
    echo "$label is not version $crate_version of the crate"
  elif [ -z "$sources" ]; then
    echo "the fingerprint of the action's sources could not be computed"
  elif [ -z "$built_from" ]; then
    echo "$label carries no source fingerprint"
  elif [ "$built_from" != "$sources" ]; then
    echo "$label was built from other sources (source fingerprint ${built_from:0:12}, the action's sources ${sources:0:12})"
  fi
}

# `rustc -vV`'s release and commit, as the toolchain part of the cache key.
toolchain_id() {
  local description release commit
  # From the action's directory: rustup takes its toolchain override from there.
  description="$(cd "$action_path" && rustc -vV)" || return 1
  release="$(sed -n 's/^release: //p' <<< "$description")"
  commit="$(sed -n 's/^commit-hash: //p' <<< "$description")"
  [ -n "$release" ] || return 1
  printf '%s-%s\n' "$release" "${commit:0:9}"
}

# Where the cache entry's binary lives for KEY; the same text is the restore and save steps'
# path, so it must not depend on where this job's runner keeps its files.
cache_directory_for() { printf '~/.cache/klaud/%s\n' "$1"; }
expanded() { printf '%s\n' "${1/#\~/$HOME}"; }

resolve_dist() {
  local binary="$action_path/dist/$target/klaud" reason="" expected_sum toolchain key directory
  if [ -z "$target" ]; then
    reason="no prebuilt binary for ${RUNNER_OS:-$(uname -s)} ${RUNNER_ARCH:-$(uname -m)}"
  elif [ ! -f "$binary" ]; then
    reason="dist/$target/klaud is absent"
  else
    expected_sum="$(awk -v path="$target/klaud" '$2 == path || $2 == "*" path { print $1 }' "$action_path/dist/SHA256SUMS" 2> /dev/null || true)"
    if [ -z "$expected_sum" ]; then
      reason="dist/SHA256SUMS has no checksum for $target/klaud"
    elif [ "$(sha256_of "$binary")" != "$expected_sum" ]; then
      reason="dist/$target/klaud does not match its checksum in dist/SHA256SUMS"
    else
      reason="$(untrusted_because "$binary" "dist/$target/klaud")"
    fi
  fi
  if [ -z "$reason" ]; then
    echo "klaud: using the prebuilt dist/$target/klaud (checksum verified, version $crate_version, source fingerprint ${sources:0:12} matches)"
    output binary-source prebuilt
    output binary "$binary"
    return
  fi
  echo "klaud: not using a prebuilt binary because $reason"
  if ! command -v cargo > /dev/null; then
    echo "::error::klaud: $reason, and cargo is not installed to build it from source"
    exit 1
  fi
  if [ -z "$sources" ]; then
    echo "::error::klaud: $reason, and the fingerprint of the action's sources could not be computed"
    exit 1
  fi
  toolchain="$(toolchain_id)" || {
    echo "::error::klaud: $reason, and rustc -vV does not name the toolchain to build it with"
    exit 1
  }
  key="klaud-$crate_version-${target:-$(uname -s)-$(uname -m)}-rust-$toolchain-$sources"
  directory="$(cache_directory_for "$key")"
  # What the restore step finds there afterwards is the restored entry, nothing older.
  rm -rf "$(expanded "$directory")"
  echo "klaud: looking for a build of these sources in the cache (key $key-*)"
  output reason "$reason"
  output cache-key "$key-"
  output cache-save-key "$key-${GITHUB_RUN_ID:-0}-${GITHUB_RUN_ATTEMPT:-1}"
  output cache-path "$directory"
}

resolve_cache() {
  local key="${KLAUD_CACHE_KEY:?KLAUD_CACHE_KEY is not set}" directory cached binary why built
  directory="$(expanded "${KLAUD_CACHE_PATH:?KLAUD_CACHE_PATH is not set}")"
  cached="$directory/klaud"
  local because="${KLAUD_DIST_REASON:-no prebuilt binary was usable}"
  if [ -n "${KLAUD_CACHE_MATCHED_KEY:-}" ]; then
    if [ ! -f "$cached" ]; then
      why="the cache entry $KLAUD_CACHE_MATCHED_KEY holds no klaud at $cached"
    else
      # Checked and run as a copy of this job's own: another job may restore into the same place.
      binary="$RUNNER_TEMP/klaud-cache/klaud"
      mkdir -p "${binary%/*}"
      cp "$cached" "$binary.new"
      chmod 0755 "$binary.new"
      mv "$binary.new" "$binary"
      why="$(untrusted_because "$binary" "the cached binary")"
    fi
    if [ -z "$why" ]; then
      echo "klaud: using the cached build of these sources (cache entry $KLAUD_CACHE_MATCHED_KEY, version $crate_version, source fingerprint ${sources:0:12} matches)"
      output binary-source cache
      output binary "$binary"
      output save false
      return
    fi
    echo "::warning::klaud: discarding the cache entry $KLAUD_CACHE_MATCHED_KEY: $why"
    because="$because, and $why"
  else
    because="$because, and the cache holds no build of these sources (${key}*)"
  fi
  rm -rf "$directory"
  echo "klaud: building from source because $because"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$RUNNER_TEMP/klaud-build}"
  case "$CARGO_TARGET_DIR" in /*) ;; *) CARGO_TARGET_DIR="$PWD/$CARGO_TARGET_DIR" ;; esac
  # Build from the action's own directory: rustup takes its toolchain override
  # (rust-toolchain.toml) and cargo its .cargo/config.toml from the current directory,
  # which is the caller's workspace; the binary is built for this host only. Compiler flags
  # the job sets for its own project (RUSTFLAGS=-C target-cpu=native, say) are left out: the
  # cache key does not name them, and a binary built with them might not run on the next
  # machine that restores it.
  (
    cd "$action_path"
    unset CARGO_BUILD_TARGET RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS
    for name in $(compgen -e); do
      if [[ "$name" == CARGO_TARGET_*_RUSTFLAGS ]]; then unset "$name"; fi
    done
    cargo build --profile fallback --locked --quiet
  )
  built="$CARGO_TARGET_DIR/fallback/klaud"
  echo "klaud: built $("$built" -V) at $built"
  output binary-source source
  output binary "$built"
  why="$(untrusted_because "$built" "the binary just built")"
  if [ -n "$why" ]; then
    echo "::warning::klaud: not saving the build in the cache: $why"
    output save false
    return
  fi
  mkdir -p "$directory"
  cp "$built" "$directory/klaud"
  echo "klaud: keeping the build in the cache as ${KLAUD_CACHE_SAVE_KEY:-a new entry}"
  output save true
}

case "${1-}" in
  dist) resolve_dist ;;
  cache) resolve_cache ;;
  *)
    echo "usage: resolve-binary.sh dist|cache" >&2
    exit 2
    ;;
esac
