#!/usr/bin/env bash
# Rebuilds dist/: the prebuilt klaud binaries action.yml runs, dist/SHA256SUMS and dist/VERSION.
#
#   scripts/build-dist.sh [TARGET...]   build TARGETs (default: both Linux targets,
#                                       x86_64-unknown-linux-gnu and aarch64-unknown-linux-gnu)
#                                       into dist/<target>/klaud, then rewrite the index
#   scripts/build-dist.sh --index-only  only rewrite dist/SHA256SUMS and dist/VERSION from the
#                                       binaries already in dist/ (the release workflow's last step)
#
# KLAUD_DIST_DIR=DIR writes the binaries and the index into DIR instead of dist/ (a scratch build
# that leaves the committed dist/ alone); KLAUD_DIST_TARGET_DIR is cargo's target directory
# (default target/dist).
#
# Linux targets are built with cargo-zigbuild against glibc 2.17, so the binary runs on every
# distribution since CentOS 7; macOS targets are built with plain cargo on a macOS host. Builds are
# reproducible: the same source, toolchain and pinned tools give the same bytes, wherever the
# repository, CARGO_HOME or the target directory live (paths are remapped, timestamps come from
# the last commit, symbols are stripped by the release profile). Tools missing from the machine
# are installed from the registries at the pinned versions below, into target/dist-tools/.
set -euo pipefail

CARGO_ZIGBUILD_VERSION=0.24.1 # crates.io
ZIGLANG_VERSION=0.15.2        # PyPI: zig itself, packaged
GLIBC_VERSION=2.17

repository="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
dist="${KLAUD_DIST_DIR:-$repository/dist}"
mkdir -p "$dist"
dist="$(cd "$dist" && pwd -P)"
tools="$repository/target/dist-tools"
target_directory="${KLAUD_DIST_TARGET_DIR:-$repository/target/dist}"

log() { printf 'build-dist: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

crate_version() {
  sed -n 's/^version = "\(.*\)"$/\1/p' "$repository/Cargo.toml" | head -n 1
}

sha256_of() {
  if command -v sha256sum > /dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d ' ' -f 1
}

# The target triple of the machine running this script, as rustc names it.
host_target() {
  rustc -vV | sed -n 's/^host: //p'
}

# The target action.yml picks for this machine (the same mapping), empty when it has none.
action_target() {
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) echo x86_64-unknown-linux-gnu ;;
    Linux-aarch64 | Linux-arm64) echo aarch64-unknown-linux-gnu ;;
    Darwin-arm64) echo aarch64-apple-darwin ;;
  esac
}

# Installs cargo-zigbuild and zig at their pinned versions unless they are already there.
ensure_zigbuild() {
  if [ "$(cargo-zigbuild --version 2> /dev/null || true)" != "cargo-zigbuild $CARGO_ZIGBUILD_VERSION" ]; then
    if [ "$("$tools/bin/cargo-zigbuild" --version 2> /dev/null || true)" != "cargo-zigbuild $CARGO_ZIGBUILD_VERSION" ]; then
      log "installing cargo-zigbuild $CARGO_ZIGBUILD_VERSION from crates.io into $tools"
      cargo install --locked --quiet --root "$tools" cargo-zigbuild --version "$CARGO_ZIGBUILD_VERSION"
    fi
    PATH="$tools/bin:$PATH"
  fi
  # zig comes from PyPI's ziglang in a virtual environment of its own (a system Python may refuse
  # pip installs); cargo-zigbuild runs it as `<python> -m ziglang`, before any zig on PATH.
  local python="$tools/venv/bin/python3"
  if [ "$("$python" -m ziglang version 2> /dev/null || true)" != "$ZIGLANG_VERSION" ]; then
    log "installing zig $ZIGLANG_VERSION (PyPI ziglang) into $tools/venv"
    python3 -m venv "$tools/venv"
    "$python" -m pip install --quiet --disable-pip-version-check "ziglang==$ZIGLANG_VERSION"
  fi
  export CARGO_ZIGBUILD_PYTHON_PATH="$python"
}

# The flags that make a build independent of where things live on this machine. rustc applies the
# last matching remapping, so the more specific paths come last.
reproducible_environment() {
  local cargo_home="${CARGO_HOME:-$HOME/.cargo}"
  local rustup_home="${RUSTUP_HOME:-$HOME/.rustup}"
  local prefixes=("$HOME=/home" "$rustup_home=/rustup" "$cargo_home=/cargo" "$repository=/klaud"
    "$target_directory=/klaud/target")
  local flags=() prefix
  for prefix in "${prefixes[@]}"; do
    flags+=("--remap-path-prefix=$prefix")
  done
  # CARGO_ENCODED_RUSTFLAGS takes precedence over every other rustflags source and, unlike
  # RUSTFLAGS, keeps paths with spaces intact (its separator is the unit separator, 0x1f).
  CARGO_ENCODED_RUSTFLAGS="$(
    IFS=$'\x1f'
    printf '%s' "${flags[*]}"
  )"
  export CARGO_ENCODED_RUSTFLAGS
  # The same for C code compiled by build scripts (ring), through zig cc.
  local c_flags=""
  for prefix in "${prefixes[@]}"; do
    c_flags+=" -ffile-prefix-map=$prefix"
  done
  export CFLAGS="${c_flags# }"
  # Build scripts that stamp a time use the last commit's instead of now.
  SOURCE_DATE_EPOCH="$(git -C "$repository" log -1 --format=%ct 2> /dev/null || echo 0)"
  export SOURCE_DATE_EPOCH
  export CARGO_TARGET_DIR="$target_directory"
  export TZ=UTC LC_ALL=C
  unset CARGO_BUILD_TARGET RUSTC_WRAPPER CARGO_BUILD_RUSTC_WRAPPER
}

# Fails early, saying what to run, when the Rust standard library of TARGET is not installed.
ensure_rust_target() {
  local target="$1" sysroot
  sysroot="$(rustc --print sysroot)"
  [ -d "$sysroot/lib/rustlib/$target/lib" ] ||
    die "the Rust standard library for $target is not installed in $sysroot (rustup target add $target)"
}

build_target() {
  local target="$1" built
  ensure_rust_target "$target"
  case "$target" in
    x86_64-unknown-linux-gnu | aarch64-unknown-linux-gnu)
      ensure_zigbuild
      log "building $target for glibc $GLIBC_VERSION with cargo-zigbuild"
      (cd "$repository" && cargo zigbuild --release --locked --bin klaud --target "$target.$GLIBC_VERSION")
      ;;
    aarch64-apple-darwin | x86_64-apple-darwin)
      [ "$(host_target)" = "$target" ] || die "$target is built on a macOS host of that architecture"
      log "building $target with cargo"
      (cd "$repository" && cargo build --release --locked --bin klaud --target "$target")
      ;;
    *) die "unknown target $target (action.yml knows x86_64-unknown-linux-gnu, aarch64-unknown-linux-gnu, aarch64-apple-darwin)" ;;
  esac
  built="$target_directory/$target/release/klaud"
  [ -f "$built" ] || die "cargo reported success but $built is missing"
  mkdir -p "$dist/$target"
  # Replaced, not overwritten in place: a running copy of the old binary keeps its inode.
  cp "$built" "$dist/$target/klaud.new"
  chmod 0755 "$dist/$target/klaud.new"
  mv "$dist/$target/klaud.new" "$dist/$target/klaud"
  log "$target: $(sha256_of "$dist/$target/klaud")  $(wc -c < "$dist/$target/klaud") bytes"
}

# Rewrites dist/SHA256SUMS (every dist/<target>/klaud, sorted by path) and dist/VERSION. The
# binary action.yml would run on this machine must report the crate version first, and every
# binary must carry the source fingerprint of this checkout (scripts/source-fingerprint.sh; the
# bytes are searched, so binaries of other platforms are checked too): VERSION must never claim a
# binary current that is not.
write_index() {
  local version fingerprint binaries=() binary relative reported runnable
  version="$(crate_version)"
  [ -n "$version" ] || die "no version in Cargo.toml"
  fingerprint="$("$repository/scripts/source-fingerprint.sh" "$repository")" ||
    die "cannot compute the source fingerprint"
  shopt -s nullglob
  binaries=("$dist"/*/klaud)
  shopt -u nullglob
  [ "${#binaries[@]}" -gt 0 ] || die "dist/ holds no <target>/klaud binary"
  runnable="$(action_target)/klaud"
  for binary in "${binaries[@]}"; do
    relative="${binary#"$dist/"}"
    if [ "$relative" = "$runnable" ]; then
      reported="$("$binary" --version)" || die "$relative --version failed"
      reported="${reported%%$'\n'*}"
      [ "$reported" = "klaud $version" ] || die "$relative reports '$reported', not 'klaud $version'"
    elif [ "$relative" = aarch64-unknown-linux-gnu/klaud ] && command -v qemu-aarch64 > /dev/null &&
      [ -d /usr/aarch64-linux-gnu ]; then
      # qemu-user with Debian's libc6-arm64-cross (ld.so and libc for aarch64) runs it here.
      reported="$(qemu-aarch64 -L /usr/aarch64-linux-gnu "$binary" --version)" ||
        die "$relative --version under qemu-aarch64 failed"
      reported="${reported%%$'\n'*}"
      [ "$reported" = "klaud $version" ] || die "$relative reports '$reported', not 'klaud $version'"
      log "$relative reports '$reported' under qemu-aarch64"
    else
      log "$relative is for another platform; its version is not checked here"
    fi
    grep -aqF "source-fingerprint $fingerprint" "$binary" ||
      die "$relative was built from other sources: it lacks 'source-fingerprint $fingerprint'"
  done
  for binary in "${binaries[@]}"; do
    printf '%s  %s\n' "$(sha256_of "$binary")" "${binary#"$dist/"}"
  done | LC_ALL=C sort -k 2 > "$dist/SHA256SUMS"
  printf '%s\n' "$version" > "$dist/VERSION"
  log "wrote $dist/SHA256SUMS (${#binaries[@]} binaries) and $dist/VERSION ($version), source fingerprint $fingerprint"
}

main() {
  if [ "${1-}" = --index-only ]; then
    [ "$#" -eq 1 ] || die "--index-only takes no targets"
    write_index
    return
  fi
  local targets=("$@")
  [ "${#targets[@]}" -gt 0 ] || targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)
  reproducible_environment
  local target
  for target in "${targets[@]}"; do
    build_target "$target"
  done
  write_index
}

main "$@"
