#!/usr/bin/env bash
# Installs the Debian packages kagent builds against, only those that are missing.
# The CUDA toolkit (NVRTC, headers, CUPTI) is expected in /usr/local/cuda (or $CUDA_HOME).
set -euo pipefail

packages=(cmake make g++ libcurl4-openssl-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
          libgtest-dev libcpp-httplib-dev libseccomp-dev binutils)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "kagent: installing missing packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -e "$cuda_home/include/nvrtc.h" ]; then
  echo "kagent: the CUDA toolkit was not found in $cuda_home (need NVRTC and its headers); set CUDA_HOME" >&2
  exit 3
fi
