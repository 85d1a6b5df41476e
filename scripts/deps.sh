#!/usr/bin/env bash
# Install the Debian packages smelt's build and tests need, if any is missing.
set -euo pipefail
pkgs=(build-essential libprotobuf-c-dev protobuf-c-compiler libonnx-dev python3-venv
      ocl-icd-opencl-dev opencl-headers pocl-opencl-icd)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
