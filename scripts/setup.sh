#!/usr/bin/env bash
# setup.sh: install the Debian packages trainer needs (apt-get update at most once), then
# configure and build Release into build/. Idempotent: with everything installed and built it
# only re-runs the (no-op) build.
#   TRAINER_CUDA=AUTO|ON|OFF   CUDA backend (default AUTO: on when nvcc is found)
#   TRAINER_WERROR=1           warnings as errors (CI)
#   BUILD_DIR=build            build directory
#   BUILD_TARGETS="a b"        build only these targets (default: all)
#   SETUP_PACKAGES=quickstart  only what building and running the trainer needs (no PyTorch, no
#                              Slurm, curl instead of npm): scripts/quickstart.sh's minutes
#   TRAINER_ASAN=1             the clang build with ASan + UBSan and the libFuzzer harnesses
#                              (RelWithDebInfo, CUDA off; scripts/test.sh --sanitize and
#                              scripts/fuzz.sh use it in build-asan/); adds clang's packages
#   CCACHE_DISABLE=1           compile without ccache (the C/C++ compiler launcher where it is
#                              installed and can write its cache; the full package set installs it)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(cmake g++ make pkg-config libcli11-dev libyaml-cpp-dev libfmt-dev doctest-dev
          libopenmpi-dev openmpi-bin libopenblas-openmp-dev libxxhash-dev zlib1g-dev libzstd-dev
          python3 python3-torch python3-numpy python3-matplotlib python3-yaml
          slurmd slurmctld slurm-client munge ccache)
# slurmd, slurmctld, slurm-client, munge: the slurm tests' one-node cluster (tests/slurm/). The
# tests start daemons of their own: Slurm's services stay down without /etc/slurm/slurm.conf,
# and a system munged that apt may start is not the one they talk to.
# ccache: scripts/test.sh builds the same C++ sources twice, in build/ (CUDA on) and in
# build-nocuda/; they differ only in -D definitions that two files outside kernels/cuda read,
# so ccache's preprocessor mode serves the second build's other objects from the first
# (measured on a fresh clone: the CPU-only build 4.6 min -> 28 s, 243 of 250 compiles served).
if [[ "${SETUP_PACKAGES:-all}" == quickstart ]]; then
  # doctest-dev: CMake configures the tests even when only the trainer is built.
  PACKAGES=(cmake g++ make pkg-config libcli11-dev libyaml-cpp-dev libfmt-dev doctest-dev
            libopenmpi-dev openmpi-bin libopenblas-openmp-dev libxxhash-dev zlib1g-dev libzstd-dev
            python3 python3-matplotlib curl ca-certificates)
else
  command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)
fi
# clang with libFuzzer and the sanitizer runtimes, its OpenMP runtime, llvm-symbolizer for
# readable reports.
[[ "${TRAINER_ASAN:-0}" == 1 ]] && PACKAGES+=(clang libclang-rt-14-dev libomp-dev llvm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

BUILD_DIR=${BUILD_DIR:-build}
if [[ "${TRAINER_ASAN:-0}" == 1 ]]; then
  # Warnings are not errors here: the gcc builds hold that line, and clang -O2 under the
  # sanitizers reports loops it could not vectorise (-Wpass-failed), which is no defect.
  CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINER_CUDA=OFF -DCMAKE_C_COMPILER=clang
              -DCMAKE_CXX_COMPILER=clang++ -DTRAINER_SANITIZE=address,undefined -DTRAINER_FUZZ=ON)
else
  CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release "-DTRAINER_CUDA=${TRAINER_CUDA:-AUTO}")
  [[ "${TRAINER_WERROR:-0}" == 1 ]] && CMAKE_ARGS+=(-DTRAINER_WERROR=ON)
fi
# ccache only where it can keep its cache (it stops every compile where it cannot), and an
# existing build folder forgets it where it is gone.
ccache_dir=$(ccache -k cache_dir 2>/dev/null) && mkdir -p "$ccache_dir" 2>/dev/null && [[ -w "$ccache_dir" ]] &&
  launcher=ccache || launcher=""
CMAKE_ARGS+=("-DCMAKE_C_COMPILER_LAUNCHER=$launcher" "-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher")
cmake -S . -B "$BUILD_DIR" "${CMAKE_ARGS[@]}" >/dev/null
if [[ -n "${BUILD_TARGETS:-}" ]]; then
  read -r -a targets <<<"$BUILD_TARGETS"
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${targets[@]}"
  echo "setup: built ${targets[*]} in $BUILD_DIR"
else
  cmake --build "$BUILD_DIR" -j"$(nproc)"
  echo "setup: built $BUILD_DIR/trainer"
fi
