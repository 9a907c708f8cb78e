#!/usr/bin/env bash
# Executes gpulab's notebooks on a machine without Go (the GPU machine). `make gpu-notebooks` copies
# this file to .gpu-nb/run.sh, next to the payload; run it from anywhere:
#
#   .gpu-nb/run.sh                                  every main notebook (notebooks/NN-*.ipynb)
#   .gpu-nb/run.sh notebooks/00-devices-and-bandwidth.ipynb ...   just these
#
# It unpacks the payload (Go toolchain, gonb, goimports, lab, module cache) into a temporary directory,
# removed at exit, and points the go command at it: GOROOT, PATH, GOMODCACHE, GOCACHE there,
# GOPROXY=off (no network), GOFLAGS=-buildvcs=false, GOTOOLCHAIN=local, CGO_ENABLED=0 (purego needs no
# cgo). GPULAB_ROOT is the checkout the bundle sits in (its parent folder); GPULAB_COMMIT is the commit
# the bundle was built from, so that records and the stamp name it. It then runs
#
#   lab nbrun NOTEBOOK... --stamp --out DIR --log KERNEL_LOG
#
# (the stamp: commit, date, host and devices, as the first output of each notebook's first code cell)
# with DIR = $OUT/executed when $OUT is set, else .build/executed in the checkout; lab's own report
# goes to DIR/nbrun.log, and the kernels' log after it. NB_TIMEOUT (seconds, default 900) limits each
# cell. Every other variable reaches the notebooks (GPULAB_SIZES=..., GPULAB_DEVICES=...). Exits
# non-zero if a notebook failed.
set -euo pipefail

BUNDLE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
ROOT="$(dirname "$BUNDLE")"
# shellcheck source=scripts/gpu-lib.sh
source "$BUNDLE/gpu-lib.sh"

notebooks=("$@")
if ((${#notebooks[@]} == 0)); then
  for nb in "$ROOT"/notebooks/[0-9][0-9]-*.ipynb; do notebooks+=("$nb"); done
fi
for i in "${!notebooks[@]}"; do
  nb="${notebooks[$i]}"
  [[ "$nb" == /* ]] || nb="$PWD/$nb"
  [[ -f "$nb" ]] || { echo "run.sh: no such notebook: $nb" >&2; exit 2; }
  notebooks[i]="$nb"
done

TMP="$(mktemp -d "${TMPDIR:-/tmp}/gpulab-nb.XXXXXX")"
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
t0=$(date +%s)
unpack "$BUNDLE/payload.tar.xz" "$TMP"
echo "unpacked the toolchain in $(($(date +%s) - t0))s"
gpu_setup

export GOROOT="$TMP/go" GOMODCACHE="$TMP/gomodcache" GOCACHE="$TMP/gocache" GOPATH="$TMP/gopath"
export PATH="$TMP/bin:$TMP/go/bin:$PATH"
export GOPROXY=off GOSUMDB=off GOFLAGS=-buildvcs=false GOTOOLCHAIN=local CGO_ENABLED=0
export GPULAB_ROOT="$ROOT" GPULAB_COMMIT="${GPULAB_COMMIT:-$(cat "$BUNDLE/COMMIT")}"

DIR="${OUT:+$OUT/executed}"
DIR="${DIR:-$ROOT/.build/executed}"
mkdir -p "$DIR"
echo "$(go version); executing ${#notebooks[@]} notebooks into $DIR"
cd "$ROOT"
set +e
lab nbrun "${notebooks[@]}" --stamp --out "$DIR" --timeout "${NB_TIMEOUT:-900}s" --log "$TMP/kernel.log" 2>&1 |
  tee "$DIR/nbrun.log"
status=${PIPESTATUS[0]}
# The kernels' log goes at the end of nbrun.log: the device runner returns at most 8 files, and the
# seven notebooks and nbrun.log are eight.
{ echo; echo "=== the kernels' log (lab nbrun --log)"; cat "$TMP/kernel.log" 2>/dev/null; } >>"$DIR/nbrun.log"
exit "$status"
