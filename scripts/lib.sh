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
# go.mod's Go, from one of: a `go` of at least 1.21 on PATH or in /usr/local/go (it switches to
# go.mod's version itself, GOTOOLCHAIN=auto, fetching it from the module proxy), or the toolchain
# that `make deps` installs into .tools/go on a machine without one (install_go_toolchain, in
# scripts/install-deps.sh). find_go puts the one it finds on PATH; require_go stops without one.
GO_VERSION="$(awk '/^go /{print $2}' "$GPULAB_ROOT/go.mod")"
GO_LOCAL="$GPULAB_ROOT/.tools/go"

# go_minor GO: the minor version of that go command (19 for go1.19.8), or 0.
go_minor() {
  local v
  v="$("$1" env GOVERSION 2>/dev/null)" || { echo 0; return; }
  v="${v#go1.}"
  echo "${v%%.*}"
}

# GPULAB_SYSTEM_GO=0 ignores any Go of the system (the CI step that tests the install uses it).
find_go() {
  local g candidates=("$GO_LOCAL/bin/go")
  if [[ "${GPULAB_SYSTEM_GO:-1}" != 0 ]]; then
    candidates=("$(command -v go 2>/dev/null)" /usr/local/go/bin/go "$GO_LOCAL/bin/go")
  fi
  for g in "${candidates[@]}"; do
    if [[ -n "$g" && -x "$g" ]] && (($(go_minor "$g") >= 21)); then
      PATH="$(dirname "$g"):$PATH"
      return 0
    fi
  done
  return 1
}

require_go() {
  find_go || die "no Go of at least 1.21 here: run \`make deps\` (it installs Go $GO_VERSION into .tools/go)"
}

find_go || true

PATH="$TOOLS_BIN:$PATH"
export PATH
CALLER_PWD="$PWD"   # for relative paths given as arguments
cd "$GPULAB_ROOT"
