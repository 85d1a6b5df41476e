#!/usr/bin/env bash
# Create or update the Python virtualenv the tests use (default: .venv in the checkout).
#   scripts/venv.sh [DIR]
# Idempotent: a stamp file inside the venv records a hash of the pinned requirements and the
# interpreter; when it matches, this exits at once without touching the network.
# Uses Debian's interpreter (python3-venv comes from scripts/deps.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$root/.venv}"
python="${SMELT_PYTHON:-/usr/bin/python3}"

# onnx 1.22.0 is the last release that ships the backend node test data the conformance runner
# reads; scikit-learn is needed only to retrain examples/digits_mlp.onnx.
requirements="onnx==1.22.0
onnxruntime==1.31.1
numpy==2.4.6
scikit-learn==1.9.1"

stamp="$venv/.smelt-requirements.stamp"
key="$(printf '%s\n%s\n' "$requirements" "$("$python" -c 'import sys; print(sys.version)')" \
       | sha256sum | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; then
    exit 0
fi

echo "venv: setting up $venv"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
rm -f "$stamp"
req_file="$(mktemp)"
trap 'rm -f "$req_file"' EXIT
printf '%s\n' "$requirements" > "$req_file"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req_file"
"$venv/bin/python" -c 'import onnx, onnxruntime, numpy, sklearn' 
echo "$key" > "$stamp"
echo "venv: ready"
