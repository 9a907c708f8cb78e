#!/usr/bin/env bash
# Starts Jupyter Notebook on work/, the student's working copies of the lessons (make lab installs
# the dependencies first). `lab copies` fills work/ from notebooks/ (git-ignored, so that editing and
# saving never dirties the repository and git pull never conflicts): a lesson with no copy is copied,
# a copy never edited follows a newer lesson, and an edited copy is never overwritten. Delete a copy to
# get the lesson afresh. Pick "Go (gonb)" as the kernel; see scripts/run-notebooks.sh for the
# first-cell convention.
#
# Jupyter reads its configuration from .build/jupyter (JUPYTER_CONFIG_DIR), which `lab jupyter-config`
# writes: custom.css and custom.js (styles; the PNG of a chart where a notebook is not trusted), the
# editor's line wrapping, and echarts, which the interactive charts load from the server (offline).
# Your own ~/.jupyter configuration is not read by make lab's server.
#
# Extra arguments for Jupyter go in JUPYTER_ARGS, e.g.
#   make lab JUPYTER_ARGS="--no-browser --port 8899 --ip 0.0.0.0"
# GPULAB_WORK names another folder for the working copies (default work/; the browser test uses a
# temporary one).
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_go

work=${GPULAB_WORK:-$GPULAB_ROOT/work}
go run ./lab copies --from notebooks --to "$work"
go run ./lab jupyter-config --to "$GPULAB_ROOT/.build/jupyter"
export JUPYTER_CONFIG_DIR=$GPULAB_ROOT/.build/jupyter

args=(--notebook-dir="$work")
((EUID == 0)) && args+=(--allow-root)   # Jupyter refuses to run as root otherwise
# shellcheck disable=SC2206  # JUPYTER_ARGS is a list of flags
args+=(${JUPYTER_ARGS:-})

log "Jupyter Notebook on $work (Ctrl-C twice to stop)"
exec "$PY" -m notebook "${args[@]}"
