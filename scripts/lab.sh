#!/usr/bin/env bash
# Starts Jupyter Notebook on notebooks/ (make lab installs the dependencies first).
# Pick "Go (gonb)" as the kernel; see scripts/run-notebooks.sh for the first-cell convention.
#
# Extra arguments for Jupyter go in JUPYTER_ARGS, e.g.
#   make lab JUPYTER_ARGS="--no-browser --port 8899 --ip 0.0.0.0"
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_go

args=(--notebook-dir="$GPULAB_ROOT/notebooks")
((EUID == 0)) && args+=(--allow-root)   # Jupyter refuses to run as root otherwise
# shellcheck disable=SC2206  # JUPYTER_ARGS is a list of flags
args+=(${JUPYTER_ARGS:-})

log "Jupyter Notebook on $GPULAB_ROOT/notebooks (Ctrl-C twice to stop)"
exec "$PY" -m notebook "${args[@]}"
