#!/usr/bin/env bash
# Installs every Debian 12 package that building, testing and benchmarking
# tenferro needs. Idempotent and non-interactive: packages already present are
# left alone, so rerunning costs one dpkg query.
#
#   scripts/setup.sh          build + test dependencies
#   scripts/setup.sh --peers  also the tools some benchmarks use (hyperfine)
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build g++ clang clang-format clang-tidy
  libclang-rt-14-dev pkg-config git
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev valgrind
  # core libraries
  libssl-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libtbb-dev libhwloc-dev hwloc libnuma-dev
  # BLAS/LAPACK providers: the serial OpenBLAS build is pinned by path
  libopenblas-dev libopenblas0-serial libopenblas0-pthread
  libblis-dev liblapacke-dev libeigen3-dev libfftw3-dev
  # renames a copy of OpenBLAS for the LAPACK provider (Note [An OpenBLAS of
  # our own] in include/tenferro/linalg_cpu/lapack_provider.h)
  patchelf
  # numeric reference for tests; the Python module (pybind11) and its tests
  # (pytest; torch for DLPack and autograd comparisons)
  python3 python3-numpy python3-dev pybind11-dev python3-pytest python3-torch
  # `pip install .` (setup.py, offline: --no-build-isolation)
  python3-pip python3-setuptools python3-wheel python3-venv
  # MPI (tenferro::mpi and its multi-rank tests; mpi4py for tenferro.mpi)
  libopenmpi-dev openmpi-bin python3-mpi4py
)
if [[ "${1:-}" == "--peers" ]]; then
  packages+=(hyperfine)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
