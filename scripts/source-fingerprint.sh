#!/usr/bin/env bash
# Prints the source fingerprint of a klaud checkout: the SHA-256 over its sources that build.rs
# embeds in the binary (`klaud --version`, second line `source-fingerprint <hex>`). action.yml runs
# a prebuilt dist/ binary only when the two agree.
#
#   scripts/source-fingerprint.sh [DIR]   DIR: the crate root (default: this script's repository)
#
# The algorithm, the same as build.rs's: every regular file under src/ (symbolic links neither
# followed nor counted) plus Cargo.toml, Cargo.lock and build.rs, by relative path; sorted by path
# as bytes; one manifest line `<sha256>  <path>` per file, as sha256sum prints it; the fingerprint
# is the SHA-256 of that manifest. coreutils (or shasum on macOS), find and xargs only.
set -euo pipefail

root="${1:-$(dirname "${BASH_SOURCE[0]}")/..}"
cd "$root"
[ -d src ] || {
  echo "source-fingerprint: $PWD has no src/" >&2
  exit 1
}

if command -v sha256sum > /dev/null; then
  hash=(sha256sum)
else
  hash=(shasum -a 256)
fi

paths=(Cargo.toml Cargo.lock build.rs)
while IFS= read -r -d '' path; do
  paths+=("$path")
done < <(find src -type f -print0)
for path in "${paths[@]}"; do
  case "$path" in
    *\\* | *$'\r'* | *$'\n'*)
      printf 'source-fingerprint: %q holds a backslash or a line break; rename it\n' "$path" >&2
      exit 1
      ;;
  esac
done

# The manifest, hashed; a missing file fails the pipeline.
printf '%s\0' "${paths[@]}" | LC_ALL=C sort -z | xargs -0 "${hash[@]}" -- | "${hash[@]}" | cut -d ' ' -f 1
