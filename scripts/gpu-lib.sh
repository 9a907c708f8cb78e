# shellcheck shell=bash
# Functions for the run scripts of the GPU bundles (.gpu/run.sh, .gpu-nb/run.sh), which carry a copy
# of this file as gpu-lib.sh. The GPU machine has no Go, and perhaps no xz.

# unpack ARCHIVE.tar.xz DIR: extracts with xz, else with Python's tarfile.
unpack() {
  if command -v xz >/dev/null 2>&1; then
    xz -dc "$1" | tar -C "$2" -xf -
  else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"
  fi || { echo "cannot unpack $1" >&2; exit 1; }
}

# gpu_setup: makes NVIDIA's OpenCL driver visible and prints what we are running on, for the logs.
# NVIDIA's OpenCL driver is installed on the GPU machines but not registered with the ICD loader:
# without this, OpenCL lists only PoCL (the CPU). Only where an NVIDIA driver is loaded.
gpu_setup() {
  local vendors=/etc/OpenCL/vendors
  if { [[ -e /proc/driver/nvidia/version ]] || command -v nvidia-smi >/dev/null 2>&1; } &&
     [[ -d "$vendors" && -w "$vendors" ]] &&
     ! grep -qs nvidia "$vendors"/*.icd && ! compgen -G "$vendors/*nvidia*" >/dev/null; then
    echo libnvidia-opencl.so.1 >"$vendors/nvidia.icd"
    echo "registered NVIDIA OpenCL: $vendors/nvidia.icd"
  fi
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  fi
  if command -v clinfo >/dev/null 2>&1; then
    clinfo -l 2>/dev/null | sed 's/^/opencl: /'
  fi
}
