#!/usr/bin/env bash
# gpu_bundle_check.sh: prove that the dependency bundle made by scripts/gpu_bundle.sh is enough,
# on its own, to configure, build (CPU only: TRAINER_CUDA=OFF, Release) and run trainer's tests.
# Runs on the Debian 12 machine that made the bundle, as root:
#   1. fetches the datasets (scripts/fetch_data.sh; the e2e tests need them) and copies DIR to
#      WORK/carried/ as if carried to another machine (DIR itself stays untouched);
#   2. enters a private mount namespace (unshare --mount) and bind-mounts empty folders / empty
#      files over every path that the system's copies of the bundle's packages installed
#      (dpkg -L), plus the system OpenMPI's own dependencies that the bundle leaves out on purpose
#      (InfiniBand verbs, UCX, libfabric, PSM, netlink; hwloc/libevent/PMIx headers), and gives
#      that namespace a loader cache rebuilt without them (ldconfig -X -C: nothing outside the
#      namespace is written or changed);
#   3. checks the hiding: every hidden folder is empty and every hidden file is empty, no hidden
#      library is in `ldconfig -p`, and the system compiler can no longer use any of the headers;
#   4. sources the copy's env.sh, checks the relocated OpenMPI (ompi_info paths, components, help
#      texts), configures and builds into WORK/build, checks that CMakeCache.txt and the compile
#      commands name no hidden path and that trainer's libraries resolve into the bundle (ldd);
#   5. runs ctest -LE cuda (all tests but the CUDA ones; --quick: the unit and mpi labels and three
#      e2e tests). The torch tests (GPT-2 and Llama parity, HF logits) use the system's
#      python3-torch, which links the libraries hidden in step 2 (libibverbs via its distributed
#      backends): they run afterwards, outside the namespace, against the same build and with the
#      bundle's env.sh (not in --quick mode).
# Exit 0 only when every step passed. The mounts vanish with the namespace. WORK (default: a new
# /tmp/gpu-bundle-check.XXXXXX) is removed after a successful run unless it was given.
#   JOBS=N   build parallelism (default: nproc)
# usage: scripts/gpu_bundle_check.sh [--quick] [DIR [WORK]]      (DIR default: <repo>/.gpu-bundle)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
self="$repo_root/scripts/gpu_bundle_check.sh"
die() { echo "gpu_bundle_check.sh: $*" >&2; exit 1; }
say() { echo "== $*"; }
ok() { echo "   ok: $*"; }

# The packages whose system copies are hidden besides the bundle's own (only those installed);
# pkg-config among them, which the bundle does not carry.
EXTRA_HIDDEN="libibverbs1 ibverbs-providers librdmacm1 libfabric1 libucx0 libpsm2-2 libpsm-infinipath1
              libnl-3-200 libnl-route-3-200 libibverbs-dev libhwloc-dev libhwloc-plugins libevent-dev
              libevent-2.1-7 libevent-extra-2.1-7 libevent-openssl-2.1-7 libpmix-dev libgfortran-12-dev
              pkg-config pkgconf pkgconf-bin"
# Files of hidden packages left visible: the reference-BLAS/LAPACK ABI copies of OpenBLAS that
# Debian's python3-numpy / python3-torch load through the libblas.so.3 / liblapack.so.3
# alternatives (the tests' /usr/bin/python3 is the system's; the bundle does not carry them and
# step 4 checks that trainer does not load them).
# The system's libzstd.so.1 (libzstd1, which the bundle carries for the trainer) stays too:
# dpkg-deb itself, which unpack.sh runs, links it, as on every Debian and Ubuntu system.
KEEP_VISIBLE="/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3 /usr/lib/x86_64-linux-gnu/openblas-openmp/liblapack.so.3
              $(dpkg-query -L libzstd1 2>/dev/null | grep -E '/libzstd\.so\.1[.0-9]*$' | tr '\n' ' ' || true)"
# The tests that run the system's python3-torch (a regex for ctest -R / -E): the GPT-2 and Llama
# parity runs and the Hugging Face logits checks.
TORCH_TEST="torch parity|hf logits parity"

inside() {  # runs in the private mount namespace; WORK, MODE, BUNDLE, JOBS come from the environment
  local empty_dir="$WORK/empty-dir" empty_file="$WORK/empty-file" kind path n_dirs=0 n_files=0
  mkdir -p "$empty_dir" "$WORK/ldconfig-aux"
  : >"$empty_file"
  chmod 755 "$empty_dir"
  chmod 644 "$empty_file"
  say "hiding the system's copies ($(wc -l <"$WORK/hide.list") mount points)"
  while read -r kind path; do
    if [[ "$kind" == d ]]; then
      mount --bind "$empty_dir" "$path" || die "mount --bind over $path failed"
      n_dirs=$((n_dirs + 1))
    else
      mount --bind "$empty_file" "$path" || die "mount --bind over $path failed"
      n_files=$((n_files + 1))
    fi
  done <"$WORK/hide.list"
  # A loader cache without the hidden libraries, for this namespace only (-X: no symlink
  # updates; the aux cache folder is a private empty one).
  mount --bind "$WORK/ldconfig-aux" /var/cache/ldconfig 2>/dev/null || true
  ldconfig -X -C "$WORK/ld.so.cache" 2>/dev/null
  mount --bind "$WORK/ld.so.cache" /etc/ld.so.cache
  ok "$n_dirs folders and $n_files files covered; /etc/ld.so.cache rebuilt without them"

  say "checking that they are hidden"
  local bad=0
  while read -r kind path; do
    if [[ "$kind" == d ]]; then
      [[ -z "$(ls -A "$path")" ]] || { echo "   NOT EMPTY: $path"; bad=1; }
    else
      [[ ! -s "$path" ]] || { echo "   NOT EMPTY: $path"; bad=1; }
    fi
  done <"$WORK/hide.list"
  [[ $bad -eq 0 ]] || die "some hidden paths still show content"
  for path in /usr/include/yaml-cpp /usr/include/fmt /usr/include/CLI /usr/include/doctest \
              /usr/include/x86_64-linux-gnu/openblas-openmp /usr/lib/x86_64-linux-gnu/openmpi \
              /usr/share/openmpi /etc/openmpi /usr/lib/x86_64-linux-gnu/cmake/yaml-cpp \
              /usr/lib/x86_64-linux-gnu/cmake/fmt /usr/lib/cmake/doctest /usr/share/cmake/CLI11; do
    [[ -d "$path" ]] && echo "   ls -A $path: $(ls -A "$path" | wc -l) entries"
  done
  for path in /usr/include/xxhash.h /usr/lib/x86_64-linux-gnu/libyaml-cpp.so.0.7 /usr/lib/x86_64-linux-gnu/libfmt.so.9 \
              /usr/lib/x86_64-linux-gnu/libxxhash.so.0 /usr/lib/x86_64-linux-gnu/libmpi.so.40 \
              /usr/lib/x86_64-linux-gnu/libopenblas.so.0 /usr/lib/x86_64-linux-gnu/libgfortran.so.5 \
              /usr/lib/x86_64-linux-gnu/libhwloc.so.15 /usr/lib/x86_64-linux-gnu/libibverbs.so.1 \
              /usr/bin/mpicc /usr/bin/mpiexec /usr/bin/orterun; do
    [[ -e "$path" ]] && echo "   $path -> $(readlink -f "$path"): $(stat -L -c %s "$path") bytes"
  done
  local found
  found="$(ldconfig -p | grep -F -f "$WORK/hidden-sonames" || true)"
  [[ -z "$found" ]] || die "ldconfig -p still lists hidden libraries:"$'\n'"$found"
  ok "ldconfig -p lists none of the $(wc -l <"$WORK/hidden-sonames") hidden sonames (e.g. libyaml-cpp.so.0.7: $(ldconfig -p | grep -c 'libyaml-cpp' || true) entries)"
  /usr/bin/mpicc --version >/dev/null 2>&1 && die "/usr/bin/mpicc still runs"
  /usr/bin/mpiexec --version >/dev/null 2>&1 && die "/usr/bin/mpiexec still runs"
  ok "/usr/bin/mpicc and /usr/bin/mpiexec do not run"
  # The bundle prunes pkg-config files and carries no pkg-config: CMake must find every
  # dependency without one (a GPU machine may have none).
  pkg-config --version >/dev/null 2>&1 && die "pkg-config still runs"
  ok "pkg-config does not run"
  local probe="$WORK/probe.cpp" header use
  while IFS='|' read -r header use; do
    printf '#include <%s>\nint main() { %s; return 0; }\n' "$header" "$use" >"$probe"
    if g++ -std=c++17 -fsyntax-only -I/usr/include/x86_64-linux-gnu/openblas-openmp \
           -I/usr/lib/x86_64-linux-gnu/openmpi/include "$probe" >/dev/null 2>&1; then
      die "the system compiler still compiles against <$header>"
    fi
  done <<'EOF'
yaml-cpp/yaml.h|YAML::Node n
fmt/core.h|(void)fmt::format("{}", 1)
CLI/CLI.hpp|CLI::App app
doctest/doctest.h|doctest::Context c
xxhash.h|(void)XXH64("", 0, 0)
cblas.h|cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 0, 0, 0, 1.f, 0, 0, 0, 0, 0.f, 0, 0)
mpi.h|MPI_Init(0, 0)
EOF
  ok "g++ can no longer use yaml-cpp, fmt, CLI11, doctest, xxhash, cblas.h or mpi.h from the system"

  say "sourcing the carried bundle's env.sh"
  # shellcheck disable=SC1091
  source "$BUNDLE/env.sh" || die "sourcing $BUNDLE/env.sh failed"
  local P="$BUNDLE/prefix"
  [[ -f "$P/.stamp" ]] || die "env.sh did not unpack $P"
  echo "   PATH starts $(cut -d: -f1 <<<"$PATH"); LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  grep -q "fallback/libgfortran5" <<<"$LD_LIBRARY_PATH" || die "env.sh did not add the libgfortran5 fallback although the system copy is hidden"
  ok "fallback libraries on LD_LIBRARY_PATH (their system copies are hidden)"

  say "checking the relocated OpenMPI"
  local paths info
  paths="$(ompi_info --parsable --path all)"
  echo "$paths" | grep -E '^path:(prefix|libdir|incdir|pkglibdir|pkgdatadir|sysconfdir):' | sed 's/^/   /'
  grep -E '^path:(prefix|bindir|libdir|incdir|pkglibdir|pkgdatadir|sysconfdir|datadir):' <<<"$paths" |
    grep -v ":$P/" && die "ompi_info names a path outside the bundle"
  info="$(ompi_info --parsable --all)"
  grep -E '^mca:mca:base:param:mca_component_path:value:' <<<"$info" | sed 's/^/   /'
  grep -q "^mca:mca:base:param:mca_component_path:value:\"$P/" <<<"$info" || die "the MCA component path is not inside the bundle"
  for c in btl:vader btl:self btl:tcp pml:ob1 coll:tuned pmix:ext3x shmem:mmap ess:hnp odls:default; do
    grep -q "^mca:${c%%:*}:${c#*:}:version:" <<<"$info" || die "ompi_info lists no ${c/:/ } component"
  done
  grep -qE '^mca:[a-z]+:(ucx|ofi|openib|psm|psm2):version:' <<<"$info" && die "a pruned component is still listed"
  ok "components btl vader/self/tcp, pml ob1, coll tuned, pmix ext3x present; ucx/ofi/openib/psm pruned"
  [[ "$(mpicc -showme:incdirs)" == "$P/"* && "$(mpicc -showme:libdirs)" == "$P/"* ]] ||
    die "mpicc -showme names '$(mpicc -showme:incdirs)' / '$(mpicc -showme:libdirs)'"
  ok "mpicc -showme: $(mpicc -showme)"
  local out
  out="$(mpiexec -n 999 true 2>&1 || true)"
  grep -q "There are not enough slots available" <<<"$out" || die "mpiexec's help text was not found: $out"
  grep -q "Sorry!  You were supposed to get help" <<<"$out" && die "OpenMPI cannot find its help files"
  ok "help texts resolve (mpiexec -n 999 prints 'There are not enough slots available')"
  # shellcheck disable=SC2016
  out="$(mpiexec -n 1 bash -c 'grep -o "/[^ ]*/pmix_mca_[a-z_]*\.so" "/proc/$PPID/maps" | sort -u')"
  grep -q "^$P/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/pmix_mca_pcompress_zlib.so$" <<<"$out" ||
    die "mpiexec's PMIx server did not load its plugins from the bundle: '$out'"
  grep -v "^$P/" <<<"$out" && die "mpiexec's PMIx server loaded plugins from outside the bundle"
  ok "mpiexec's PMIx server loads its $(wc -l <<<"$out") plugins from the bundle"
  out="$(PMIX_MCA_mca_base_component_path=/nonexistent mpiexec -n 1 true 2>&1 || true)"
  if ! grep -q "pmix_mca_base_component_path MCA variable was used" <<<"$out" || grep -q "Sorry!" <<<"$out"; then
    die "PMIx cannot find its help files: $out"
  fi
  ok "PMIx help texts resolve (a bad PMIx component path gets its explanation)"
  # shellcheck disable=SC2016
  out="$(mpiexec --oversubscribe --mca btl vader,self -n 8 bash -c 'echo "$OMPI_COMM_WORLD_RANK"' | sort -n | tr '\n' ' ')"
  [[ "$out" == "0 1 2 3 4 5 6 7 " ]] || die "mpiexec -n 8 printed '$out'"
  ok "mpiexec -n 8 runs (ranks: $out)"

  say "configuring $WORK/build (Release, TRAINER_CUDA=OFF) from the bundle"
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$repo_root" -B "$WORK/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DTRAINER_CUDA=OFF \
    -DTRAINER_WERROR=ON >"$WORK/configure.log" 2>&1 || { cat "$WORK/configure.log"; die "configure failed"; }
  local cache="$WORK/build/CMakeCache.txt" var value
  for var in yaml-cpp_DIR fmt_DIR doctest_DIR CLI11_INCLUDE_DIR XXHASH_INCLUDE_DIR XXHASH_LIB \
             OPENBLAS_INCLUDE_DIR OPENBLAS_LIB MPI_C_COMPILER MPIEXEC_EXECUTABLE MPI_C_HEADER_DIR MPI_mpi_LIBRARY; do
    value="$(sed -n "s/^$var:[A-Z]*=//p" "$cache")"
    printf '   %-22s %s\n' "$var" "$value"
    [[ "$value" == "$P/"* ]] || die "$var is '$value', not inside the bundle"
  done
  check_no_hidden "$cache"
  ok "every dependency entry of CMakeCache.txt is inside the bundle; no hidden path appears in it"

  say "building (nice, -j$JOBS)"
  nice -n 10 cmake --build "$WORK/build" -j"$JOBS" >"$WORK/build.log" 2>&1 || { tail -50 "$WORK/build.log"; die "build failed"; }
  ok "built $(grep -c . "$WORK/build.log") log lines; tail: $(tail -1 "$WORK/build.log")"
  check_no_hidden "$WORK/build/compile_commands.json"
  grep -q -- "-isystem $P/usr/include" "$WORK/build/compile_commands.json" || die "compile commands do not use the bundle's headers"
  ok "compile commands use $P/usr/include and name no hidden path"
  echo "   trainer RUNPATH: $(readelf -d "$WORK/build/trainer" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')"
  local lddout lib resolved
  lddout="$(ldd "$WORK/build/trainer")"
  grep -q "not found" <<<"$lddout" && die "ldd trainer: $(grep 'not found' <<<"$lddout")"
  grep -qE 'lib(blas|lapack)\.so' <<<"$lddout" && die "trainer loads libblas/liblapack, which the bundle does not carry"
  for lib in libyaml-cpp.so libfmt.so libxxhash.so libopenblas.so libgfortran.so libquadmath.so libmpi.so \
             libopen-pal.so libopen-rte.so libhwloc.so libevent_core libudev.so; do
    resolved="$(awk -v l="$lib" 'index($1, l) == 1 {print $3}' <<<"$lddout")"
    printf '   %-16s -> %s\n' "$lib" "$resolved"
    [[ "$resolved" == "$P/"* ]] || die "trainer's $lib resolves to '$resolved', not into the bundle"
  done
  ok "ldd: every bundled library of trainer resolves into the bundle"

  say "ctest ($MODE)"
  cd "$WORK/build"
  local rc=0
  if [[ "$MODE" == quick ]]; then
    ctest -L '^(unit|mpi)$' -E "$TORCH_TEST" --output-on-failure -j1 2>&1 | tee "$WORK/ctest-unit-mpi.log" || rc=1
    ctest -R 'e2e: (test_data_mobydick|test_resume_3d|test_ckpt_tools)$' --output-on-failure -j1 2>&1 |
      tee "$WORK/ctest-e2e.log" || rc=1
  else
    ctest -LE cuda -E "$TORCH_TEST" --output-on-failure -j1 2>&1 | tee "$WORK/ctest.log" || rc=1
  fi
  return $rc
}

# check_no_hidden FILE: no absolute path in FILE is a hidden path or lies below one.
check_no_hidden() {
  /usr/bin/python3 - "$1" "$WORK/hide.list" <<'PY' || die "$1 names hidden system paths (see above)"
import re, sys
text = open(sys.argv[1], errors="replace").read()
hidden = [line.split(None, 1)[1].strip() for line in open(sys.argv[2]) if line.strip()]
bad = set()
# Each maximal run of path characters starting at a "/" (so "-I/usr/include/fmt" yields
# "/usr/include/fmt" and "BUNDLE/prefix/usr/include/fmt" stays one token under the bundle).
for tok in re.findall(r'/[^\s;:"\'=,\]\)]+', text):
    for h in hidden:
        if tok == h or tok.startswith(h + "/"):
            bad.add(tok)
for b in sorted(bad):
    print("   hidden path named:", b)
sys.exit(1 if bad else 0)
PY
}

if [[ "${1:-}" == --inside ]]; then
  inside
  exit $?
fi

# ---- outside: arguments, preparation ----
MODE=full
args=()
for arg in "$@"; do
  case "$arg" in
    --quick) MODE=quick ;;
    -h|--help) sed -n '2,25p' "$self" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option '$arg' (usage: scripts/gpu_bundle_check.sh [--quick] [DIR [WORK]])" ;;
    *) args+=("$arg") ;;
  esac
done
[[ ${#args[@]} -le 2 ]] || die "too many arguments (usage: scripts/gpu_bundle_check.sh [--quick] [DIR [WORK]])"
DIR="$(cd "${args[0]:-$repo_root/.gpu-bundle}" 2>/dev/null && pwd)" ||
  die "no bundle at ${args[0]:-$repo_root/.gpu-bundle}; make it with scripts/gpu_bundle.sh"
[[ -f "$DIR/env.sh" && -f "$DIR/MANIFEST.txt" ]] || die "$DIR is not a bundle (no env.sh / MANIFEST.txt); make it with scripts/gpu_bundle.sh"
[[ $(id -u) -eq 0 ]] || die "needs root, for a private mount namespace (unshare --mount) and bind mounts"
for tool in unshare mount ldconfig dpkg-query cmake g++ /usr/bin/python3; do
  command -v "$tool" >/dev/null || die "$tool is missing"
done
unshare --mount --propagation private true 2>/dev/null || die "unshare --mount does not work here (a container without CAP_SYS_ADMIN?)"
given_work=0
if [[ ${#args[@]} -ge 2 ]]; then
  WORK="${args[1]}"; given_work=1
  mkdir -p "$WORK"; WORK="$(cd "$WORK" && pwd)"
else
  WORK="$(mktemp -d /tmp/gpu-bundle-check.XXXXXX)"
fi
JOBS="${JOBS:-$(nproc)}"
START=$(date +%s)

say "datasets (scripts/fetch_data.sh, before any hiding)"
"$repo_root/scripts/fetch_data.sh" | sed 's/^/   /'

say "carrying $DIR to $WORK/carried/.gpu-bundle"
rm -rf "$WORK/carried" "$WORK/build"
mkdir -p "$WORK/carried"
cp -a "$DIR" "$WORK/carried/.gpu-bundle"
rm -rf "$WORK/carried/.gpu-bundle/prefix" "$WORK/carried/.gpu-bundle"/prefix.*
BUNDLE="$WORK/carried/.gpu-bundle"
ok "$(du -sb "$BUNDLE" | cut -f1) bytes carried ($(ls "$BUNDLE/debs" | wc -l) debs)"

say "listing what to hide"
bundle_pkgs="$(awk '!/^#/ && NF {print $1}' "$DIR/MANIFEST.txt" | tr '\n' ' ')"
/usr/bin/python3 - "$bundle_pkgs $EXTRA_HIDDEN" "$KEEP_VISIBLE" "$WORK/hide.list" "$WORK/hidden-sonames" <<'PY'
# Mount points that hide every installed file of the given packages: a folder all of whose
# entries (recursively) belong to them becomes one mount of an empty folder; other files are
# covered one by one; symlinks are left alone (they then point at hidden targets).
import os, re, subprocess, sys
pkgs, keep = sys.argv[1].split(), set(sys.argv[2].split())
owned, installed = set(), []
for p in pkgs:
    r = subprocess.run(["dpkg-query", "-L", p], capture_output=True, text=True)
    if r.returncode != 0:
        continue
    installed.append(p)
    owned.update(l for l in r.stdout.splitlines() if l.startswith("/") and l != "/.")
owned -= keep
memo = {}
def full(d):
    if d not in memo:
        try:
            entries = [os.path.join(d, e) for e in os.listdir(d)]
        except OSError:
            entries = [None]
        memo[d] = all(e in owned and (os.path.islink(e) or not os.path.isdir(e) or full(e)) for e in entries)
    return memo[d]
dirs = sorted(p for p in owned if os.path.isdir(p) and not os.path.islink(p) and full(p))
chosen = set()
for d in dirs:
    parent = os.path.dirname(d)
    if not (parent in owned and os.path.isdir(parent) and not os.path.islink(parent) and full(parent)):
        chosen.add(d)
def under_chosen(p):
    q = os.path.dirname(p)
    while q not in ("/", ""):
        if q in chosen:
            return True
        q = os.path.dirname(q)
    return False
files = sorted(p for p in owned if os.path.isfile(p) and not os.path.islink(p) and not under_chosen(p))
with open(sys.argv[3], "w") as out:
    for d in sorted(chosen):
        out.write(f"d {d}\n")
    for f in files:
        out.write(f"f {f}\n")
sonames = sorted({os.path.basename(p) for p in owned if re.fullmatch(r"lib.*\.so\.\d+", os.path.basename(p))})
with open(sys.argv[4], "w") as out:
    out.write("".join(f"{s} (\n" for s in sonames))
print(f"   {len(installed)} installed packages: {' '.join(installed)}")
print(f"   {len(owned)} paths -> {len(chosen)} folder mounts + {len(files)} file mounts; {len(sonames)} sonames")
PY

say "entering a private mount namespace"
rc=0
WORK="$WORK" MODE="$MODE" BUNDLE="$BUNDLE" JOBS="$JOBS" TORCH_TEST="$TORCH_TEST" \
  unshare --mount --propagation private -- bash "$self" --inside || rc=$?
if [[ $rc -ne 0 ]]; then
  echo "gpu_bundle_check.sh: FAILED inside the namespace (rc $rc); logs in $WORK" >&2
  exit 1
fi
say "left the namespace: the system's copies are visible again ($(ls /usr/include/yaml-cpp | wc -l) entries in /usr/include/yaml-cpp)"

torch_rc=0
if [[ "$MODE" == full ]]; then
  say "torch parity outside the namespace (system python3-torch; bundle build and env.sh)"
  (
    # shellcheck disable=SC1091
    source "$BUNDLE/env.sh"
    cd "$WORK/build"
    ctest -R "$TORCH_TEST" --output-on-failure -j1 2>&1 | tee "$WORK/ctest-torch.log"
  ) || torch_rc=1
fi

say "summary ($(($(date +%s) - START)) s)"
for log in "$WORK"/ctest*.log; do
  echo "   $(basename "$log" .log): $(grep -h "tests passed" "$log" | tr '\n' ' ')"
done
[[ $torch_rc -eq 0 ]] || die "the torch parity test failed (logs in $WORK)"
if [[ $given_work -eq 0 ]]; then rm -rf "$WORK"; else echo "   logs and build in $WORK"; fi
echo "gpu_bundle_check.sh: PASS"
