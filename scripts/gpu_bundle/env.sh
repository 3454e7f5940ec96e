# shellcheck shell=bash
# env.sh: `source` this file (bash) to build and run trainer with this dependency bundle.
# Copied into the bundle by scripts/gpu_bundle.sh. On first use it runs unpack.sh, which extracts debs/ into
# prefix/ next to this file (TRAINER_BUNDLE_PREFIX=DIR unpacks elsewhere, e.g. when this folder
# is read-only or shared). Then it prepends the bundle to PATH (mpicc, mpiexec), LD_LIBRARY_PATH
# and CMAKE_PREFIX_PATH, sets MPI_HOME and OpenMPI's / PMIx's relocation variables (OPAL_PREFIX,
# OPAL_SYSCONFDIR, PMIX_PREFIX, PMIX_LIBDIR, PMIX_DATADIR), adds the fallback libraries (libgfortran5, libquadmath0,
# libudev1) only where the system's loader cache lacks them, and as root allows mpiexec to run
# as root (OMPI_ALLOW_RUN_AS_ROOT), and keeps the LD_LIBRARY_PATH it found in
# TRAINER_BUNDLE_ORIG_LD_LIBRARY_PATH. Sourcing it again changes nothing. On failure it prints why,
# sets nothing and returns 1.
if [ -z "${BASH_VERSION:-}" ]; then
  echo "env.sh: source this file from bash" >&2
  return 1 2>/dev/null || exit 1
fi
_tgb_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)" || return 1
_tgb_p="${TRAINER_BUNDLE_PREFIX:-$_tgb_dir/prefix}"
_tgb_stamp="$(cat "$_tgb_dir/MANIFEST.txt" "$_tgb_dir/PRUNE.txt" "$_tgb_dir/unpack.sh" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$_tgb_p/.stamp" 2>/dev/null)" != "$_tgb_stamp" ]; then
  if ! bash "$_tgb_dir/unpack.sh" "$_tgb_p"; then
    echo "env.sh: unpacking the bundle failed; the environment is unchanged" >&2
    unset _tgb_dir _tgb_p _tgb_stamp
    return 1
  fi
fi
_tgb_p="$(cd "$_tgb_p" && pwd)"
_tgb_prepend() {  # VAR DIR: put DIR first in the colon list VAR unless it is already there
  case ":${!1:-}:" in
    *":$2:"*) ;;
    *) export "$1=$2${!1:+:${!1}}" ;;
  esac
}
_tgb_append() {
  case ":${!1:-}:" in
    *":$2:"*) ;;
    *) export "$1=${!1:+${!1}:}$2" ;;
  esac
}
_tgb_lib="$_tgb_p/usr/lib/x86_64-linux-gnu"
# The library path before the first sourcing, for programs that must not see the bundle's
# libraries (python3 with its own wheels: scripts/gpu_check.sh's sys_python3).
export TRAINER_BUNDLE_ORIG_LD_LIBRARY_PATH="${TRAINER_BUNDLE_ORIG_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}"
_tgb_prepend PATH "$_tgb_p/usr/bin"
_tgb_prepend LD_LIBRARY_PATH "$_tgb_lib/openmpi/lib"
_tgb_prepend LD_LIBRARY_PATH "$_tgb_lib/openblas-openmp"
_tgb_prepend LD_LIBRARY_PATH "$_tgb_lib"
_tgb_prepend CMAKE_PREFIX_PATH "$_tgb_p/usr"
# Fallback libraries: only those the system does not have (a newer system copy stays in use).
_tgb_ldconfig="$(command -v ldconfig || echo /sbin/ldconfig)"
_tgb_cache="$("$_tgb_ldconfig" -p 2>/dev/null || true)"
for _tgb_fb in "$_tgb_p"/fallback/*/usr/lib/x86_64-linux-gnu; do
  [ -d "$_tgb_fb" ] || continue
  for _tgb_so in "$_tgb_fb"/lib*.so.*; do
    _tgb_name="$(basename "$_tgb_so")"
    case "$_tgb_name" in *.so.*.*) continue ;; esac   # soname links only (libgfortran.so.5)
    if ! grep -q "^[[:space:]]*$_tgb_name (libc6,x86-64)" <<<"$_tgb_cache"; then
      _tgb_append LD_LIBRARY_PATH "$_tgb_fb"
    fi
  done
done
# CMake's FindMPI looks in MPI_HOME first. OpenMPI 4.1 finds its MCA components, help texts and
# wrapper-compiler data below OPAL_PREFIX (Debian configured them relative to the prefix) and its
# mca-params.conf in OPAL_SYSCONFDIR (configured as /etc/openmpi). Debian's PMIx has absolute
# libdir / datadir, so its plugins (lib/pmix) and help texts (share/pmix) need all three.
export MPI_HOME="$_tgb_p/usr"
export OPAL_PREFIX="$_tgb_p/usr"
export OPAL_SYSCONFDIR="$_tgb_p/etc/openmpi"
export PMIX_PREFIX="$_tgb_lib/pmix2" PMIX_LIBDIR="$_tgb_lib/pmix2/lib" PMIX_DATADIR="$_tgb_lib/pmix2/share"
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export TRAINER_GPU_BUNDLE="$_tgb_dir"
unset -f _tgb_prepend _tgb_append
unset _tgb_dir _tgb_p _tgb_stamp _tgb_lib _tgb_ldconfig _tgb_cache _tgb_fb _tgb_so _tgb_name
