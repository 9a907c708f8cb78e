#!/usr/bin/env bash
# Starts Jupyter Notebook on work/, the student's working copies of the lessons (make lab installs
# the dependencies first). `lab copies` fills work/ from notebooks/ (git-ignored, so that editing and
# saving never dirties the repository and git pull never conflicts): a lesson with no copy is copied,
# a copy never edited follows a newer lesson, and an edited copy is never overwritten. Delete a copy to
# get the lesson afresh. Pick "Go (gonb)" as the kernel; see scripts/run-notebooks.sh for the
# first-cell convention.
#
# Extra arguments for Jupyter go in JUPYTER_ARGS, e.g.
#   make lab JUPYTER_ARGS="--no-browser --port 8899 --ip 0.0.0.0"
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_go

go run ./lab copies --from notebooks --to work

args=(--notebook-dir="$GPULAB_ROOT/work")
((EUID == 0)) && args+=(--allow-root)   # Jupyter refuses to run as root otherwise
# shellcheck disable=SC2206  # JUPYTER_ARGS is a list of flags
args+=(${JUPYTER_ARGS:-})

log "Jupyter Notebook on $GPULAB_ROOT/work (Ctrl-C twice to stop)"
exec "$PY" -m notebook "${args[@]}"
