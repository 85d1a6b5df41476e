#!/usr/bin/env bash
# Install the Debian packages smelt's build and tests need, if any is missing.
set -euo pipefail
pkgs=(build-essential libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata python3-venv
      ocl-icd-opencl-dev opencl-headers pocl-opencl-icd pkgconf libopenblas-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Optional, for the model tests only: PyTorch exports of real architectures
# (tests/models/torch_export.py). Their tests are skipped where these cannot be installed.
optional=(python3-torch python3-torchvision)
missing_opt=()
for p in "${optional[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing_opt+=("$p")
done
[ ${#missing[@]} -eq 0 ] && [ ${#missing_opt[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ ${#missing_opt[@]} -gt 0 ]; then
    echo "deps: installing ${missing_opt[*]} (optional, for the PyTorch export tests)"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing_opt[@]}" >/dev/null ||
        echo "deps: could not install ${missing_opt[*]}: those model tests will be skipped"
fi
