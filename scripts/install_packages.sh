#!/usr/bin/env bash
# install_packages.sh — install the named Debian packages that are missing, with apt-get (as root, or
# through sudo). Used by setup.sh (the build's dependencies: a failure stops it) and test.sh (packages
# only a test needs, with --optional WHAT: a failure or a machine without apt-get/root prints what
# WHAT loses and returns 0, sudo never asks for a password).
#
#   scripts/install_packages.sh cmake ninja-build
#   scripts/install_packages.sh --optional "the slurm test" slurmctld slurmd
set -euo pipefail
optional=""
if [ "${1:-}" = --optional ]; then optional=$2; shift 2; fi

give_up() {
  if [ -n "$optional" ]; then echo "install_packages: $1; $optional will skip" >&2; exit 0; fi
  echo "install_packages: $1" >&2
  exit 1
}

missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} = 0 ]; then
  echo "install_packages: all $# packages present"
  exit 0
fi
command -v apt-get > /dev/null || give_up "apt-get not found; install these packages by hand: ${missing[*]}"
sudo=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo > /dev/null || give_up "need root or sudo to install: ${missing[*]}"
  sudo=(sudo)
  [ -n "$optional" ] && sudo=(sudo -n)
fi
echo "install_packages: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq || give_up "apt-get update failed"
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
  || give_up "apt-get could not install: ${missing[*]}"
