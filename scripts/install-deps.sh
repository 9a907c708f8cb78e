#!/usr/bin/env bash
# Installs what gpulab needs to run its notebooks and tests, skipping whatever is already there.
# Safe to run again and again: when everything is in place it takes about a second.
#
#   0. Go, when there is no Go of at least 1.21: go.mod's version, from the Go module proxy as the
#      module golang.org/toolchain (the zip the go command itself would fetch), checked against the
#      sha256 pinned below, unpacked into .tools/go (git-ignored). A Go of 1.21 or later switches
#      to go.mod's version by itself.
#   1. Debian/Ubuntu packages: Jupyter (the notebook server and ipykernel, for `make lab`; notebooks
#      are executed headless by `lab nbrun`, without Python), OpenCL (the PoCL CPU driver, the ICD
#      loader, clinfo), bubblewrap (the sandbox `lab grade` runs submissions in), shellcheck (a
#      gate of make test) and, on Debian, Chromium (the browser test). apt-get runs only if one is missing.
#   2. Go tools, built into the repo-local, git-ignored .tools/bin:
#        gonb       the Go Jupyter kernel     (version pinned by go.mod's `tool` line)
#        goimports  needed by gonb            (version pinned by go.mod: golang.org/x/tools)
#        gopls      needed by gonb            (pinned below)
#      Each is rebuilt only if missing or built from another version.
#   3. `go mod download`, so notebook cells compile against the module cache, without `go get`.
#   4. The Jupyter kernelspec "gonb", pointing at .tools/bin/gonb. Registered again only when it
#      is missing or points at another binary or checkout.
#
# With --go-only it installs Go (step 0) and stops. GPULAB_SYSTEM_GO=0 ignores any Go of the system.
#
# Runs unattended (CI, no stdin): apt-get is non-interactive. If not root, apt-get goes through sudo.
# On Ubuntu, pocl-opencl-icd and clinfo come from "universe".
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

APT_PACKAGES=(
  jupyter-notebook python3-ipykernel
  pocl-opencl-icd ocl-icd-libopencl1 clinfo
  bubblewrap
  shellcheck
)
# Chromium and a font for the browser test (lab/browser_test.go). Ubuntu ships Chromium only as a
# snap, which a container cannot run: there the browser test skips, saying so.
if grep -qx 'ID=debian' /etc/os-release 2>/dev/null; then
  APT_PACKAGES+=(chromium fonts-dejavu-core)
fi
GOPLS_VERSION=v0.20.0   # verified with go.mod's Go; v0.24 wants Go 1.27
# sha256 of the golang.org/toolchain module zips of go.mod's Go, by architecture (from the proxy,
# checked against the Go checksum database).
declare -A GO_TOOLCHAIN_SHA256=(
  [amd64]=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7
  [arm64]=02b36b6787b3ac767668f630e2998df45a3b1f9ffee08d1bf3ef6487cd658d99
)

START=$(now)

# --- 0. Go ---------------------------------------------------------------------------
install_go_toolchain() {
  if find_go; then
    log "go: $(go env GOVERSION) at $(command -v go)"
    return
  fi
  local arch
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "no Go here, and no pinned Go toolchain for $(uname -m): install Go $GO_VERSION from https://go.dev/dl/" ;;
  esac
  local want="${GO_TOOLCHAIN_SHA256[$arch]}" version="v0.0.1-go$GO_VERSION.linux-$arch"
  local proxy="${GOPROXY:-https://proxy.golang.org}"
  proxy="${proxy%%[,|]*}"
  [[ "$proxy" == direct || "$proxy" == off ]] && proxy=https://proxy.golang.org
  if ! command -v curl >/dev/null 2>&1 || ! command -v unzip >/dev/null 2>&1; then
    apt_install curl unzip ca-certificates
  fi
  local tmp
  tmp="$(mktemp -d "$GPULAB_ROOT/.tools/go-download.XXXXXX")"
  log "go: no Go here; fetching Go $GO_VERSION ($version, 70 MB) from $proxy"
  curl -fsSL --retry 3 -o "$tmp/go.zip" "$proxy/golang.org/toolchain/@v/$version.zip" ||
    { rm -rf "$tmp"; die "go: could not download $proxy/golang.org/toolchain/@v/$version.zip"; }
  local got
  got="$(sha256sum "$tmp/go.zip" | cut -d' ' -f1)"
  [[ "$got" == "$want" ]] || { rm -rf "$tmp"; die "go: the toolchain zip has sha256 $got, not the pinned $want"; }
  unzip -q "$tmp/go.zip" -d "$tmp"
  rm -rf "$GO_LOCAL"
  mv "$tmp/golang.org/toolchain@$version" "$GO_LOCAL"
  rm -rf "$tmp"
  chmod +x "$GO_LOCAL"/bin/* "$GO_LOCAL"/pkg/tool/*/*  # module zips do not keep file modes
  find_go || die "go: $GO_LOCAL/bin/go does not run"
  log "go: $(go env GOVERSION) installed in $GO_LOCAL"
}

# --- 1. Debian packages -------------------------------------------------------------
# apt_install PKG...: installs packages with apt-get, through sudo when not root.
apt_install() {
  command -v apt-get >/dev/null 2>&1 ||
    die "missing packages ($*) and no apt-get: install them with your package manager"
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || die "not root and no sudo: as root, run: apt-get install $*"
    sudo=(sudo)
  fi
  log "apt packages: installing $*"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

install_apt_packages() {
  local missing=() p
  for p in "${APT_PACKAGES[@]}"; do
    # `dpkg -s` alone also succeeds for removed-but-not-purged packages; check the status.
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    log "apt packages: all ${#APT_PACKAGES[@]} present"
    return
  fi
  apt_install "${missing[@]}"
}

# --- 2. Go tools -------------------------------------------------------------------
# Version of module $2 that binary $1 was built with ("" if the binary is missing).
built_version() {
  [[ -x "$1" ]] || return 0
  go version -m "$1" 2>/dev/null | awk -v m="$2" '($1 == "mod" || $1 == "dep") && $2 == m { print $3; exit }'
}

# Builds tool $1 from package $2 (a `tool` of go.mod, so its version comes from go.mod).
build_go_tool() {
  local name=$1 pkg=$2 mod=$3 want have
  want=$(go list -m -f '{{.Version}}' "$mod")
  have=$(built_version "$TOOLS_BIN/$name" "$mod")
  if [[ "$have" == "$want" ]]; then
    log "$name $want: present"
    return
  fi
  log "$name $want: building${have:+ (had $have)}"
  go build -o "$TOOLS_BIN/$name" "$pkg"
}

install_go_tools() {
  mkdir -p "$TOOLS_BIN"
  build_go_tool gonb github.com/janpfeifer/gonb github.com/janpfeifer/gonb
  build_go_tool goimports golang.org/x/tools/cmd/goimports golang.org/x/tools
  local have
  have=$(built_version "$TOOLS_BIN/gopls" golang.org/x/tools/gopls)
  if [[ "$have" == "$GOPLS_VERSION" ]]; then
    log "gopls $GOPLS_VERSION: present"
  else
    log "gopls $GOPLS_VERSION: building${have:+ (had $have)}"
    # `go install pkg@version` ignores the current module, so it can pin its own version.
    GOBIN="$TOOLS_BIN" go install "golang.org/x/tools/gopls@$GOPLS_VERSION"
  fi
}

# --- 3. Go modules -----------------------------------------------------------------
download_modules() {
  log "go mod download"
  go mod download
}

# --- 4. GoNB kernelspec ---------------------------------------------------------------
# Jupyter starts kernels with the environment of the notebook server, plus the kernelspec's
# "env". We add two entries there, so that notebooks work however Jupyter was started
# (make lab, a bare `jupyter notebook`, VS Code; `lab nbrun` starts gonb itself, with the same two):
#   PATH         .tools/bin and Go first: gonb runs go, goimports and gopls.
#   GPULAB_ROOT  this checkout: the first cell of every notebook does `go work use "$GPULAB_ROOT"`.
# jupyter_client (>= 7) expands ${PATH} in kernelspec env values from the server's environment.
kernelspec_status() {
  "$PY" - "$TOOLS_BIN/gonb" "$GPULAB_ROOT" <<'PY'
import sys
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
gonb, root = sys.argv[1], sys.argv[2]
try:
    spec = KernelSpecManager().get_kernel_spec("gonb")
except NoSuchKernel:
    print("missing"); sys.exit()
if spec.argv[:1] != [gonb]:
    print("points at " + (spec.argv[0] if spec.argv else "nothing"))
elif spec.env.get("GPULAB_ROOT") != root:
    print("set up for checkout " + spec.env.get("GPULAB_ROOT", "(none)"))
else:
    print("ok " + spec.resource_dir)
PY
}

register_kernel() {
  local status
  status=$(kernelspec_status)
  if [[ "$status" == ok* ]]; then
    log "gonb kernelspec: present (${status#ok })"
    return
  fi
  log "gonb kernelspec: registering ($status)"
  # Writes $JUPYTER_DATA_DIR (default ~/.local/share/jupyter)/kernels/gonb/kernel.json.
  # Needs goimports and gopls on PATH: they are, in .tools/bin.
  "$TOOLS_BIN/gonb" --install
  local spec_dir="${JUPYTER_DATA_DIR:-$HOME/.local/share/jupyter}/kernels/gonb"
  # gonb copies itself into the kernelspec directory when it runs from under /tmp (a checkout there,
  # as in some CI): point the spec back at .tools/bin/gonb so that there is one binary to keep fresh.
  rm -f "$spec_dir/gonb" "$spec_dir/gonb~"
  "$PY" - "$spec_dir/kernel.json" "$TOOLS_BIN/gonb" "$TOOLS_BIN:$(go env GOROOT)/bin" "$GPULAB_ROOT" <<'PY'
import json, sys
path, gonb, bins, root = sys.argv[1:]
with open(path) as f:
    spec = json.load(f)
spec["argv"][0] = gonb
spec.setdefault("env", {}).update({"PATH": bins + ":${PATH}", "GPULAB_ROOT": root})
with open(path, "w") as f:
    json.dump(spec, f, indent=1)
    f.write("\n")
PY
  status=$(kernelspec_status)
  [[ "$status" == ok* ]] || die "gonb kernelspec still not right after registering: $status"
}

mkdir -p "$GPULAB_ROOT/.tools"
install_go_toolchain
[[ "${1:-}" == --go-only ]] && exit 0
install_apt_packages
"$PY" -c 'import notebook, ipykernel' ||
  die "$PY cannot import Jupyter (notebook, ipykernel)"
install_go_tools
download_modules
register_kernel
log "dependencies ready in $(elapsed_since "$START")"
