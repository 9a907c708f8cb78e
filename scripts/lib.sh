# shellcheck shell=bash disable=SC2034  # (variables set here are used by the scripts sourcing it)
# Common setup for gpulab's shell helpers. Source it, do not run it:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# After sourcing:
#   GPULAB_ROOT  the repository root (exported: notebooks read it in their first cell)
#   TOOLS_BIN    $GPULAB_ROOT/.tools/bin, where gonb, goimports and gopls live (git-ignored)
#   PATH         has TOOLS_BIN and the Go toolchain on it
#   HOME         is a writable directory (CI may hand us anything)
# and the helpers log, warn, die, elapsed_since are defined.

set -euo pipefail

GPULAB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
export GPULAB_ROOT
TOOLS_BIN="$GPULAB_ROOT/.tools/bin"
BUILD_DIR="$GPULAB_ROOT/.build"

# The Debian python3 is the one with Jupyter; a pyenv/venv python3 earlier on PATH is not.
PY=/usr/bin/python3

log()  { printf '==> %s\n' "$*" >&2; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
die()  { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

# elapsed_since START_SECONDS -> "12.3s" (uses $EPOCHREALTIME, bash >= 5).
now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }
elapsed_since() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.1fs", e - s }'; }

# --- HOME --------------------------------------------------------------------------
# Go (build and module caches), Jupyter (kernelspecs, runtime files) and GoNB all write under
# $HOME. If it is unset or not writable (some CI runners), use .tools/home inside the repo
# (git-ignored, and kept by `make clean`).
if [[ -z "${HOME:-}" || ! -d "$HOME" || ! -w "$HOME" ]]; then
  warn "HOME='${HOME:-}' is not a writable directory; using $GPULAB_ROOT/.tools/home"
  export HOME="$GPULAB_ROOT/.tools/home"
  mkdir -p "$HOME"
  # Keep the module cache deletable with the rest of .tools (Go makes it read-only by default).
  export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modcacherw"
fi

# --- Go toolchain -----------------------------------------------------------------
# CI images often have Go in /usr/local/go without it being on PATH.
if ! command -v go >/dev/null 2>&1; then
  for d in /usr/local/go/bin /usr/lib/go/bin; do
    if [[ -x "$d/go" ]]; then PATH="$d:$PATH"; break; fi
  done
fi
command -v go >/dev/null 2>&1 ||
  die "go not found (looked on PATH and in /usr/local/go/bin). Install Go $(awk '/^go /{print $2}' "$GPULAB_ROOT/go.mod") first: https://go.dev/dl/"

PATH="$TOOLS_BIN:$PATH"
export PATH
CALLER_PWD="$PWD"   # for relative paths given as arguments
cd "$GPULAB_ROOT"
