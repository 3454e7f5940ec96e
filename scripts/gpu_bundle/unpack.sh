#!/usr/bin/env bash
# unpack.sh PREFIX: extract this bundle's debs into PREFIX (env.sh runs it on first use and
# whenever MANIFEST.txt, PRUNE.txt or this file changed). Copied into the bundle by scripts/gpu_bundle.sh.
# Invariants: every deb's sha256 is checked against MANIFEST.txt before anything is extracted;
# the tree is built in a temporary sibling folder and renamed into place only when complete,
# under a lock, so an interrupted or concurrent run never leaves a half-made PREFIX; the result
# depends only on MANIFEST.txt, PRUNE.txt and this file, whose hash goes to PREFIX/.stamp.
# Needs bash, coreutils, tar with xz, and dpkg-deb or binutils' ar.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="${1:?usage: unpack.sh PREFIX}"
die() { echo "unpack.sh: $*" >&2; exit 1; }
mkdir -p "$(dirname "$prefix")" || die "cannot create $(dirname "$prefix") (set TRAINER_BUNDLE_PREFIX to a writable folder)"
prefix="$(cd "$(dirname "$prefix")" && pwd)/$(basename "$prefix")"
stamp="$(cat "$here/MANIFEST.txt" "$here/PRUNE.txt" "$here/unpack.sh" | sha256sum | cut -d' ' -f1)"

exec 9>"$prefix.lock" || die "cannot write $prefix.lock (set TRAINER_BUNDLE_PREFIX to a writable folder)"
command -v flock >/dev/null && flock 9
[[ "$(cat "$prefix/.stamp" 2>/dev/null)" == "$stamp" ]] && exit 0   # another run finished it

extract() {  # DEB DEST
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$2"
  else
    command -v ar >/dev/null || die "neither dpkg-deb nor ar (binutils) is available to unpack $1"
    local member
    member="$(ar t "$1" | grep '^data\.tar')" || die "$1 has no data.tar member"
    case "$member" in
      *.xz) ar p "$1" "$member" | tar -xJf - -C "$2" ;;
      *.gz) ar p "$1" "$member" | tar -xzf - -C "$2" ;;
      *.zst) ar p "$1" "$member" | tar --zstd -xf - -C "$2" ;;
      *) die "unknown member $member in $1" ;;
    esac
  fi
}

tmp="$prefix.tmp.$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
count=0
while read -r pkg version _arch sha file role; do
  [[ -z "$pkg" || "$pkg" == \#* ]] && continue
  [[ -f "$here/$file" ]] || die "$here/$file is missing (copy the whole bundle folder)"
  [[ "$(sha256sum "$here/$file" | cut -d' ' -f1)" == "$sha" ]] || die "sha256 mismatch for $here/$file ($pkg $version); the copy is damaged"
  dest="$tmp"
  [[ "$role" == fallback ]] && dest="$tmp/fallback/$pkg"
  mkdir -p "$dest"
  extract "$here/$file" "$dest"
  count=$((count + 1))
done <"$here/MANIFEST.txt"
echo "unpack.sh: unpacked $count packages into $prefix" >&2

# Prune, in the prefix and in each fallback tree.
shopt -s globstar nullglob dotglob
roots=("$tmp" "$tmp"/fallback/*)
while read -r pat; do
  [[ -z "$pat" || "$pat" == \#* ]] && continue
  for root in "${roots[@]}"; do
    for p in "$root"/$pat; do rm -rf "$p"; done
  done
done <"$here/PRUNE.txt"
shopt -u globstar nullglob dotglob
# Absolute symlinks (none in these packages today) would point at the system: make them
# relative inside the tree. Then drop dangling ones, repeatedly (chains).
while IFS= read -r -d '' link; do
  target="$(readlink "$link")"
  [[ "$target" == /* ]] || continue
  ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$tmp$target")" "$link"
done < <(find "$tmp" -type l -print0)
for _ in 1 2 3 4 5; do
  [[ -n "$(find "$tmp" -xtype l -print -quit)" ]] || break
  find "$tmp" -xtype l -delete
done
find "$tmp" -depth -type d -empty -delete
# CMake package files that hard-code the /usr prefix (doctest's) compute it from their own place.
while IFS= read -r -d '' f; do
  rel="$(dirname "${f#"$tmp/usr/"}")"
  ups="$(sed 's|[^/][^/]*|..|g' <<<"$rel")"
  sed -i "s|set(_IMPORT_PREFIX \"/usr\")|get_filename_component(_IMPORT_PREFIX \"\${CMAKE_CURRENT_LIST_DIR}/$ups\" ABSOLUTE)|" "$f"
done < <(grep -rlZ --include='*.cmake' 'set(_IMPORT_PREFIX "/usr")' "$tmp/usr" || true)
# The names Debian's alternatives system would give the OpenMPI programs.
bin="$tmp/usr/bin"
[[ -x "$bin/opal_wrapper" && -x "$bin/orterun" ]] || die "opal_wrapper / orterun missing after unpacking"
for w in mpicc mpicxx mpic++ mpiCC; do ln -sfn opal_wrapper "$bin/$w"; done
for r in mpiexec mpirun; do ln -sfn orterun "$bin/$r"; done
[[ -f "$tmp/usr/share/openmpi/mpicc-wrapper-data.txt" ]] || die "mpicc's wrapper data is missing"

echo "$stamp" >"$tmp/.stamp"
rm -rf "$prefix"
mv -T "$tmp" "$prefix"
trap - EXIT
