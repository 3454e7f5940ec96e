#!/usr/bin/env bash
# gpu_bundle.sh: on a Debian 12 (bookworm) x86-64 machine that reaches Debian's archive, gather
# into DIR what a bare CUDA GPU machine (no network; CUDA toolkit, cmake, g++, python3 present)
# lacks to configure, build and run trainer and its tests: yaml-cpp, fmt, CLI11, doctest, xxhash,
# OpenBLAS (OpenMP build, with libgfortran5) and OpenMPI 4.1 (mpicc, mpiexec, libmpi and what
# its shared-memory runs need). Carry DIR to the GPU machine and `source DIR/env.sh` there.
#
# Invariants:
#   - DIR holds only what is carried: debs/ (verbatim Debian packages; apt-get checks them
#     against the signed index and this script re-checks their sha256 on every run), MANIFEST.txt
#     (package, version, arch, sha256, file, role per package), PRUNE.txt, unpack.sh, env.sh and
#     README.txt. `du -sb DIR` must stay at or under 48 MiB, or this script exits 1.
#   - DIR/prefix/ is derived and never carried: env.sh makes it on first use (unpack.sh extracts
#     the debs, drops what PRUNE.txt names, relocates). Any one here is removed, so that DIR as
#     a whole can be carried.
#   - Re-running reuses every deb whose sha256 still matches the index (no network then); a deb
#     whose package is no longer listed or whose version changed is replaced.
#   - Every ELF file the unpacked prefix keeps needs only libraries that the bundle itself holds
#     or that every glibc >= 2.36 Linux with g++ has (BASE_LIBS below); OpenMPI / PMIx plugins that
#     need others (InfiniBand verbs, UCX, libfabric, PSM, netlink) are pruned, and the check fails
#     the script if anything else is left unresolved.
#
# usage: scripts/gpu_bundle.sh [DIR]        (default: <repo>/.gpu-bundle)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "${1:-}" in
  -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "gpu_bundle.sh: unknown option '$1' (usage: scripts/gpu_bundle.sh [DIR])" >&2; exit 2 ;;
esac
[[ $# -le 1 ]] || { echo "gpu_bundle.sh: too many arguments (usage: scripts/gpu_bundle.sh [DIR])" >&2; exit 2; }
DIR="${1:-$repo_root/.gpu-bundle}"
MAX_BYTES=$((48 * 1024 * 1024))

die() { echo "gpu_bundle.sh: $*" >&2; exit 1; }

# package  role. build: headers / CMake configs / link-time files; run: shared libraries and
# programs; fallback: libraries many systems already have (env.sh puts them on LD_LIBRARY_PATH
# only where the dynamic loader's cache lacks them, so a newer system copy is not shadowed).
PACKAGES=(
  "libyaml-cpp-dev build"        "libyaml-cpp0.7 run"
  "libfmt-dev build"             "libfmt9 run"
  "libcli11-dev build"
  "doctest-dev build"
  "libxxhash-dev build"          "libxxhash0 run"
  "zlib1g-dev build"             "libzstd-dev build"       "libzstd1 run"
  "libopenblas-openmp-dev build" "libopenblas0-openmp run"
  "libgfortran5 fallback"        "libquadmath0 fallback"   # libopenblas.so.0 -> libgfortran.so.5 -> libquadmath.so.0
  "libopenmpi-dev build"         "libopenmpi3 run"         "openmpi-bin run"   "openmpi-common run"
  "libhwloc15 run"                                        # libmpi, libopen-pal, libopen-rte
  "libevent-core-2.1-7 run"      "libevent-pthreads-2.1-7 run"  # libopen-pal, orterun
  "libpmix2 run"                 "libmunge2 run"           # mca_pmix_ext3x (mpiexec's PMIx server, ranks' client)
  "libudev1 fallback"                                     # libhwloc.so.15
)
# Libraries assumed on the GPU machine (glibc >= 2.36, libstdc++ / libgcc_s / libgomp of its g++, zlib).
BASE_LIBS="libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libutil.so.1 libresolv.so.2
           ld-linux-x86-64.so.2 libstdc++.so.6 libgcc_s.so.1 libgomp.so.1 libz.so.1"

# ---- prerequisites ----
# shellcheck disable=SC1091
codename="$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")"
[[ "$codename" == bookworm ]] ||
  die "this machine is '${codename:-unknown}', not Debian 12 (bookworm): the bundle's libraries must be built for glibc 2.36 to run on the GPU machine"
[[ "$(dpkg --print-architecture)" == amd64 ]] || die "this machine is not amd64 (x86-64)"
for tool in apt-get apt-cache dpkg-deb readelf sha256sum du; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install apt dpkg binutils coreutils)"
done
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
APT_OPTS=()
[[ $(id -u) -eq 0 ]] && APT_OPTS=(-o APT::Sandbox::User=root)   # root: download without the _apt sandbox

# ---- resolve each package's candidate version, file and sha256 from the local apt index ----
declare -A VERSION SHA FILE ARCH ROLE
names=()
for entry in "${PACKAGES[@]}"; do
  read -r pkg role <<<"$entry"
  names+=("$pkg")
  ROLE[$pkg]="$role"
done
# One line per package: name version arch sha256 pool-file (the candidate's stanza only).
show() {
  apt-cache show --no-all-versions "${names[@]}" 2>/dev/null | awk '
    /^Package:/ {p=$2} /^Version:/ {v=$2} /^Architecture:/ {a=$2} /^SHA256:/ {s=$2} /^Filename:/ {f=$2}
    /^$/ {if (p != "") print p, v, a, s, f; p=""}
    END {if (p != "") print p, v, a, s, f}'
}
resolve() {
  local pkg version arch sha file
  while read -r pkg version arch sha file; do
    VERSION[$pkg]="$version" ARCH[$pkg]="$arch" SHA[$pkg]="$sha" FILE[$pkg]="$(basename "$file")"
  done < <(show)
  for pkg in "${names[@]}"; do
    [[ -n "${VERSION[$pkg]:-}" ]] || return 1
  done
}
if ! resolve; then
  echo "gpu_bundle.sh: some packages are not in the apt index; running apt-get update" >&2
  $SUDO apt-get update -qq || die "apt-get update failed (is the Debian archive reachable?)"
  resolve || die "packages unknown to apt: $(for p in "${names[@]}"; do [[ -n "${VERSION[$p]:-}" ]] || echo -n "$p "; done)(bookworm main has them)"
fi
for pkg in "${names[@]}"; do
  [[ ${#SHA[$pkg]} -eq 64 && "${FILE[$pkg]}" == *.deb ]] || die "apt-cache show $pkg gave no sha256 / file name"
done

# ---- download what is missing or changed; drop debs no longer listed ----
mkdir -p "$DIR/debs"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX")"
trap 'rm -rf "$work"' EXIT
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
fetched=0
for pkg in "${names[@]}"; do
  deb="$DIR/debs/${FILE[$pkg]}"
  if [[ -f "$deb" && "$(sha_of "$deb")" == "${SHA[$pkg]}" ]]; then continue; fi
  rm -f "$deb"
  mkdir -p "$work/dl"
  echo "gpu_bundle.sh: downloading $pkg ${VERSION[$pkg]}" >&2
  (cd "$work/dl" && apt-get "${APT_OPTS[@]}" download -qq "$pkg=${VERSION[$pkg]}") ||
    die "apt-get download $pkg=${VERSION[$pkg]} failed"
  got=("$work/dl"/*.deb)
  [[ ${#got[@]} -eq 1 && -f "${got[0]}" ]] || die "apt-get download $pkg left ${#got[@]} files"
  [[ "$(sha_of "${got[0]}")" == "${SHA[$pkg]}" ]] || die "sha256 of the downloaded $pkg does not match the apt index"
  mv "${got[0]}" "$deb"
  fetched=$((fetched + 1))
done
for deb in "$DIR/debs"/*; do
  [[ -e "$deb" ]] || continue
  keep=0
  for pkg in "${names[@]}"; do [[ "$(basename "$deb")" == "${FILE[$pkg]}" ]] && keep=1; done
  if [[ $keep -eq 0 ]]; then echo "gpu_bundle.sh: removing unlisted $(basename "$deb")" >&2; rm -rf "$deb"; fi
done

# ---- MANIFEST.txt (deterministic: no dates, so an unchanged bundle does not re-unpack) ----
{
  echo "# trainer GPU dependency bundle: Debian 12 (bookworm) amd64 packages, written by scripts/gpu_bundle.sh."
  echo "# Every deb is verbatim from the Debian archive (bookworm, bookworm-updates or bookworm-security) and"
  echo "# is checked against the sha256 below before it is unpacked."
  echo "# package version arch sha256 file role"
  for pkg in "${names[@]}"; do
    echo "$pkg ${VERSION[$pkg]} ${ARCH[$pkg]} ${SHA[$pkg]} debs/${FILE[$pkg]} ${ROLE[$pkg]}"
  done
} >"$DIR/MANIFEST.txt"

# ---- PRUNE.txt: fixed rules, then the plugins whose libraries are neither bundled nor base ----
is_elf() {  # regular file starting with the ELF magic (read without forking)
  local LC_ALL=C magic=""
  [[ -f "$1" && ! -L "$1" ]] || return 1
  IFS= read -r -d '' -n 4 magic <"$1" 2>/dev/null || true
  [[ "$magic" == $'\x7fELF' ]]
}
needed_of() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
soname_of() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'; }
mkdir -p "$work/raw"
for pkg in "${names[@]}"; do dpkg-deb -x "$DIR/debs/${FILE[$pkg]}" "$work/raw"; done
# Everything loaded by dlopen (OpenMPI MCA components, PMIx and hwloc plugins) and OpenMPI's
# libmca_common_* helpers, which only such components use, may be dropped; nothing else may.
pluggable() {
  case "$1" in
    usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so | usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so | \
      usr/lib/x86_64-linux-gnu/hwloc/*.so | usr/lib/x86_64-linux-gnu/libmca_common_*) return 0 ;;
  esac
  return 1
}
declare -A provided=() dropped=()
for lib in $BASE_LIBS; do provided[$lib]=1; done
mapfile -t elves < <(cd "$work/raw" && find . -type f | sed 's|^\./||' | sort)
for f in "${elves[@]}"; do
  is_elf "$work/raw/$f" || continue
  s="$(soname_of "$work/raw/$f")"
  [[ -n "$s" ]] && provided[$s]="$f"
done
changed=1
while [[ $changed -eq 1 ]]; do   # a dropped helper (libmca_common_ucx) drops its users: repeat to a fixed point
  changed=0
  for f in "${elves[@]}"; do
    if [[ -n "${dropped[$f]:-}" ]] || ! pluggable "$f" || ! is_elf "$work/raw/$f"; then continue; fi
    for n in $(needed_of "$work/raw/$f"); do
      if [[ -z "${provided[$n]:-}" ]]; then
        dropped[$f]="needs $n"
        s="$(soname_of "$work/raw/$f")"
        [[ -n "$s" ]] && unset "provided[$s]"
        changed=1
        break
      fi
    done
  done
done
{
  cat <<'EOF'
# Paths (bash globs, globstar on) that unpack.sh deletes after extracting, relative to the prefix
# and to each prefix/fallback/<package>; dangling symlinks are removed afterwards.
# Documentation, static libraries, pkg-config files (they hard-code /usr):
usr/share/doc
usr/share/man
usr/share/lintian
usr/share/info
**/*.a
**/pkgconfig
# OpenBLAS: the reference-BLAS/LAPACK ABI copies (trainer links libopenblas) and CMake files
# that hard-code /usr:
usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so*
usr/lib/x86_64-linux-gnu/openblas-openmp/liblapack.so*
usr/lib/x86_64-linux-gnu/openblas-openmp/cmake
usr/lib/x86_64-linux-gnu/cmake/openblas
# OpenMPI's Fortran and Java bindings and their wrapper compilers:
usr/lib/x86_64-linux-gnu/fortran
usr/lib/x86_64-linux-gnu/libmpi_mpifh*
usr/lib/x86_64-linux-gnu/libmpi_usempi*
usr/lib/x86_64-linux-gnu/libmpi_java*
usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi_mpifh*
usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi_usempi*
usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi_java*
usr/bin/mpijavac*
usr/bin/mpif77*
usr/bin/mpif90*
usr/bin/mpifort*
usr/bin/oshfort
usr/bin/shmemfort
usr/share/openmpi/mpif77*
usr/share/openmpi/mpif90*
usr/share/openmpi/mpifort*
usr/share/openmpi/oshfort*
usr/share/openmpi/shmemfort*
# Plugins (and OpenMPI helper libraries) that need a library the bundle does not carry, found
# by scripts/gpu_bundle.sh from their ELF NEEDED entries:
EOF
  for f in "${elves[@]}"; do
    [[ -n "${dropped[$f]:-}" ]] && echo "$f"
  done
} >"$DIR/PRUNE.txt"
echo "gpu_bundle.sh: plugins pruned (they need libraries outside the bundle):" >&2
for f in "${elves[@]}"; do
  [[ -n "${dropped[$f]:-}" ]] && echo "  $(basename "$f") (${dropped[$f]})" >&2
done

# ---- unpack.sh (run by env.sh on first use) ----
# Both are kept as plain files in scripts/gpu_bundle/ and copied verbatim.
cp "$repo_root/scripts/gpu_bundle/unpack.sh" "$DIR/unpack.sh"
chmod +x "$DIR/unpack.sh"

# ---- env.sh (sourced; changes no shell options) ----
cp "$repo_root/scripts/gpu_bundle/env.sh" "$DIR/env.sh"

# ---- check the unpacked tree: every ELF's libraries resolve inside the bundle or BASE_LIBS ----
bash "$DIR/unpack.sh" "$work/prefix"
declare -A have=()
for lib in $BASE_LIBS; do have[$lib]=1; done
mapfile -t kept < <(find "$work/prefix" -type f | sort)
nelf=0
for f in "${kept[@]}"; do
  is_elf "$f" || continue
  nelf=$((nelf + 1))
  s="$(soname_of "$f")"
  [[ -n "$s" ]] && have[$s]=1
done
missing=""
versions=""
for f in "${kept[@]}"; do
  is_elf "$f" || continue
  for n in $(needed_of "$f"); do
    [[ -n "${have[$n]:-}" ]] || missing+="  ${f#"$work/prefix/"} needs $n"$'\n'
  done
  versions+="$(readelf -V -W "$f" 2>/dev/null | grep -o 'GLIBC\(XX\)\?_[0-9.]*[0-9]' || true)"$'\n'
done
glibc="$(grep '^GLIBC_' <<<"$versions" | sort -uV | tail -1 || true)"
glibcxx="$(grep '^GLIBCXX_' <<<"$versions" | sort -uV | tail -1 || true)"
[[ -z "$missing" ]] || die "unresolved libraries after unpacking (add their packages or prune the files):"$'\n'"$missing"
echo "gpu_bundle.sh: $nelf ELF files checked; all libraries resolve in the bundle or the base set; newest symbol versions: ${glibc:-none}, ${glibcxx:-none}" >&2

# ---- smoke test of the relocated OpenMPI (no hiding here; scripts/gpu_bundle_check.sh does that) ----
(
  export TRAINER_BUNDLE_PREFIX="$work/prefix"
  # shellcheck disable=SC1091
  source "$DIR/env.sh"
  [[ "$(command -v mpicc)" == "$work/prefix/usr/bin/mpicc" ]] || die "env.sh did not put the bundle's mpicc first on PATH"
  [[ "$(mpicc -showme:incdirs)" == "$work/prefix/usr/lib/x86_64-linux-gnu/openmpi/include"* ]] ||
    die "mpicc -showme:incdirs is '$(mpicc -showme:incdirs)', not inside the bundle"
  info="$(ompi_info --parsable; ompi_info --parsable --path all)"
  for c in "btl:vader" "btl:self" "btl:tcp" "pml:ob1" "coll:tuned" "pmix:ext3x" "shmem:mmap" "odls:default" "plm:rsh" "ess:hnp"; do
    grep -q "^mca:${c%%:*}:${c#*:}:" <<<"$info" || die "ompi_info lists no ${c/:/ } component"
  done
  grep -q "^path:pkglibdir:$work/prefix/" <<<"$info" || die "ompi_info's component path is not inside the bundle"
) || exit 1
echo "gpu_bundle.sh: relocated OpenMPI OK (mpicc, ompi_info: btl vader/self/tcp, pml ob1, pmix ext3x)" >&2

# ---- README.txt ----
{
  cat <<'EOF'
trainer GPU dependency bundle
=============================

What: the Debian 12 (bookworm, amd64) packages that a CUDA GPU machine without network lacks to
configure, build and run trainer and its tests: yaml-cpp, fmt, CLI11, doctest, xxhash, OpenBLAS
(OpenMP build) with libgfortran5, and OpenMPI 4.1 with its runtime (hwloc, libevent, PMIx, munge).
The machine must be x86-64 Linux with glibc >= 2.36 (Ubuntu 24.04 is fine) and have g++, cmake,
python3 and the CUDA toolkit of its own. Made by scripts/gpu_bundle.sh; MANIFEST.txt lists every
package with version and sha256 (verbatim Debian debs under debs/).

Use (bash):
    source .gpu-bundle/env.sh          # first time: unpacks debs/ into .gpu-bundle/prefix (~1 s)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j
    mpiexec -n 8 build/trainer train recipe.yaml
scripts/gpu_check.sh sources .gpu-bundle/env.sh itself when it exists. Builds link the bundle's
libraries by absolute path (build-tree RPATH) and also need env.sh's LD_LIBRARY_PATH at run time,
so source env.sh in every shell (and batch job) that runs them; keep the folder where it was
unpacked, or unpack again and rebuild.

Variables env.sh sets: PATH (mpicc, mpicxx, mpiexec, mpirun, ompi_info), LD_LIBRARY_PATH,
CMAKE_PREFIX_PATH, MPI_HOME, OPAL_PREFIX, OPAL_SYSCONFDIR, PMIX_PREFIX, PMIX_LIBDIR, PMIX_DATADIR,
TRAINER_GPU_BUNDLE, and as root OMPI_ALLOW_RUN_AS_ROOT and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM.
TRAINER_BUNDLE_PREFIX=DIR makes it unpack into DIR instead of prefix/ (read-only or shared copies).

Pruned on unpacking (PRUNE.txt): documentation, static libraries, pkg-config files, Fortran and
Java MPI bindings, OpenBLAS's reference-BLAS/LAPACK copies, and the OpenMPI / PMIx plugins that
need libraries the bundle does not carry (InfiniBand verbs, UCX, libfabric, PSM, netlink). So
this OpenMPI is meant for jobs on one node (shared memory: btl vader/self; TCP is kept but
runs across nodes were not tried); on a cluster with InfiniBand build against the site's MPI.

Fallback libraries (libgfortran5, libquadmath0, libudev1) go on LD_LIBRARY_PATH only when the
system's loader cache (ldconfig -p) lacks them. The other libraries are Debian 12's builds and
take precedence over same-named system copies in shells that sourced env.sh.

Packages:
EOF
  printf '  %-24s %-24s %-8s %s\n' package version role sha256
  for pkg in "${names[@]}"; do printf '  %-24s %-24s %-8s %s\n' "$pkg" "${VERSION[$pkg]}" "${ROLE[$pkg]}" "${SHA[$pkg]}"; done
  echo
  echo "Newest symbol versions the unpacked files need: ${glibc:-none}, ${glibcxx:-none}."
} >"$DIR/README.txt"

# ---- size of what is carried ----
# prefix/ (and its lock) is derived: env.sh unpacks it again on first use. It is always removed
# here, since the device tool's carry takes the whole folder and cannot leave a sub-folder out
# (the unpacked prefix is about 59 MB: with it the carry would pass its 64 MiB).
if [[ -e "$DIR/prefix" ]] || compgen -G "$DIR/prefix.*" >/dev/null; then
  echo "gpu_bundle.sh: removing $DIR/prefix, this machine's unpacked copy (env.sh unpacks it again on first use)" >&2
  rm -rf "$DIR/prefix" "$DIR"/prefix.*
fi
bytes="$(du -sb "$DIR" | cut -f1)"
echo "gpu_bundle.sh: $DIR: ${#names[@]} packages ($fetched downloaded now), $bytes bytes to carry ($(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB; limit 48 MiB)"
[[ $bytes -le $MAX_BYTES ]] || die "$DIR is $bytes bytes, over the 48 MiB ($MAX_BYTES bytes) limit"
