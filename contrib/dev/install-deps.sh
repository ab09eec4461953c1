#!/usr/bin/env bash
# Installs, with apt-get, what building and testing dfccl needs and is missing (Debian 12).
set -euo pipefail
packages=(build-essential autoconf automake libtool pkg-config
          libopenmpi-dev openmpi-bin libhwloc-dev libucx-dev libjson-c-dev spin
          coinor-libcbc-dev coinor-libclp-dev
          python3-mpi4py python3-numpy)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "dfccl: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
