#!/usr/bin/env bash
# setup.sh — install gptrain's dependencies (Debian/Ubuntu packages only) and build Release into build/.
# Idempotent: packages already present are skipped, an existing build is updated incrementally.
# Takes ~1 min for packages on a fresh machine, ~3-6 min to build on 2 cores (longer with CUDA).
#
#   scripts/setup.sh                 # deps + build (CUDA backend too when a toolkit is found)
#   GPTRAIN_CUDA=OFF scripts/setup.sh          # CPU-only build
#   GPTRAIN_CUDA_ARCHS="90" scripts/setup.sh   # CUDA archs (default "80;90")
#   GPTRAIN_SKIP_DEPS=1 scripts/setup.sh       # build only
#   GPTRAIN_TARGETS="pretrain_gpt" scripts/setup.sh   # build only these targets
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

packages=(build-essential cmake ninja-build pkg-config ccache
  libyaml-cpp-dev libfmt-dev catch2 libopenmpi-dev openmpi-bin libopenblas-dev
  nlohmann-json3-dev zlib1g-dev libzstd-dev libsentencepiece-dev python3 python3-venv python3-pip python3-torch)

if [ "${GPTRAIN_SKIP_DEPS:-0}" != 1 ]; then
  scripts/install_packages.sh "${packages[@]}"
fi

cuda=${GPTRAIN_CUDA:-AUTO}
if [ "$cuda" != OFF ]; then
  if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null; then
    echo "setup: CUDA toolkit found: building the CUDA backend too (archs ${GPTRAIN_CUDA_ARCHS:-80;90})"
  else
    echo "setup: no CUDA toolkit (/usr/local/cuda or nvcc on PATH): CPU-only build. For GPUs install the CUDA toolkit 12+ with cuDNN 9 and NCCL."
    cuda=OFF
  fi
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
build=${GPTRAIN_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPTRAIN_CUDA="$cuda" \
  -DGPTRAIN_CUDA_ARCHS="${GPTRAIN_CUDA_ARCHS:-80;90}" "${launcher[@]}" >/dev/null
# GPTRAIN_TARGETS limits the build (the quick start needs only the apps); default: everything.
read -r -a targets <<< "${GPTRAIN_TARGETS:-all}"
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
echo "setup: built into $build/bin: $(ls "$build/bin" | tr '\n' ' ')"
