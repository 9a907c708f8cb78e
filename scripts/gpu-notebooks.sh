#!/usr/bin/env bash
# Builds .gpu-nb/, what a GPU machine without Go needs to execute the notebooks of this checkout
# (GoNB compiles every cell with the go command, so unlike .gpu/ this bundle carries a toolchain):
#
#   .gpu-nb/run.sh           unpacks the payload to /tmp and runs `lab nbrun --stamp` on the main
#                            notebooks (a copy of scripts/gpu-notebooks-run.sh; its header says more)
#   .gpu-nb/gpu-lib.sh       functions run.sh uses: unpacking, NVIDIA's OpenCL (scripts/gpu-lib.sh)
#   .gpu-nb/payload.tar.xz   go/          the Go toolchain, trimmed to what `go build` needs: bin/go,
#                                         pkg/tool/*/{asm,cgo,compile,link}, pkg/include, lib/time,
#                                         and src/ without cmd/, tests and testdata
#                            bin/         gonb and goimports (GoNB runs it on every cell) and lab,
#                                         static (CGO_ENABLED=0), stripped
#                            gomodcache/  the modules that gpulab's packages and the notebooks import
#                                         (sources without tests and testdata), and the go.mod file of
#                                         every other module of the build graph, so that `go build`
#                                         works with GOPROXY=off
#   .gpu-nb/COMMIT           the commit of this checkout, which run.sh stamps into the notebooks
#
# The bundle uses the checkout it sits in (GPULAB_ROOT: the notebooks import its packages), so carry
# .gpu-nb next to the working tree. It stays well under the 64 MiB that the device runner carries.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_go

BUNDLE="$GPULAB_ROOT/.gpu-nb"
STAGE="$BUILD_DIR/gpu-nb"
COMMIT="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
[[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]] || COMMIT="$COMMIT-dirty"

START=$(now)
rm -rf "$BUNDLE" "$STAGE"
mkdir -p "$BUNDLE" "$STAGE/bin" "$STAGE/gomodcache/cache/download"

# --- the toolchain --------------------------------------------------------------------
goroot="$(go env GOROOT)"
tooldir="pkg/tool/$(go env GOOS)_$(go env GOARCH)"
log "toolchain $(go env GOVERSION) from $goroot"
mkdir -p "$STAGE/go/bin" "$STAGE/go/$tooldir"
cp "$goroot/VERSION" "$goroot/go.env" "$STAGE/go/"
cp "$goroot/bin/go" "$STAGE/go/bin/"
for tool in asm cgo compile link; do cp "$goroot/$tooldir/$tool" "$STAGE/go/$tooldir/"; done
cp -r "$goroot/pkg/include" "$STAGE/go/pkg/"
cp -r "$goroot/lib" "$STAGE/go/"
(cd "$goroot" && find src -path src/cmd -prune -o -type d -name testdata -prune -o \
  -type f ! -name '*_test.go' -print0) | (cd "$goroot" && xargs -0 cp --parents -t "$STAGE/go")

# --- the binaries ---------------------------------------------------------------------
log "gonb, goimports and lab (static)"
flags=(-trimpath "-ldflags=-s -w -X gpulab/engine/bench.stampedCommit=$COMMIT")
CGO_ENABLED=0 go build "${flags[@]}" -o "$STAGE/bin/gonb" github.com/janpfeifer/gonb
CGO_ENABLED=0 go build "${flags[@]}" -o "$STAGE/bin/goimports" golang.org/x/tools/cmd/goimports
CGO_ENABLED=0 go build "${flags[@]}" -o "$STAGE/bin/lab" ./lab

# --- the module cache subset -------------------------------------------------------------
# Every module version of the module graph (`go mod graph`: older versions too, which the go command
# reads while it loads the graph of a module without graph pruning) contributes its go.mod and .info,
# where the local cache has them (a build here needed no others); the modules that provide packages
# to gpulab or to the notebooks (gonbui) also their .ziphash, which go checks against go.sum, and the
# directories of those packages alone: their non-test files and the files they embed (a module such
# as gonb or x/text is mostly other things).
log "go mod download (taken from $(go env GOMODCACHE))"
go mod download
modcache="$(go env GOMODCACHE)"
while read -r modver; do
  mod="${modver%@*}"
  # shellcheck disable=SC2001  # the cache escapes capitals as !lower, which needs sed's \L
  rel="cache/download/$(sed 's/[A-Z]/!\L&/g' <<<"$mod")/@v/${modver#*@}"
  [[ -f "$modcache/$rel.mod" ]] || continue
  mkdir -p "$STAGE/gomodcache/$(dirname "$rel")"
  cp "$modcache/$rel.mod" "$STAGE/gomodcache/$rel.mod"
  if [[ -f "$modcache/$rel.info" ]]; then cp "$modcache/$rel.info" "$STAGE/gomodcache/$rel.info"; fi
done < <(go mod graph | tr ' ' '\n' | grep @ | sort -u)
declare -A copied=()
while IFS='|' read -r gomod moddir dir embeds; do
  [[ "$dir" == "$modcache"/* ]] || continue  # the standard library and gpulab itself
  if [[ -z "${copied[$moddir]:-}" ]]; then  # the module's first package
    copied[$moddir]=1
    base="${gomod%.mod}"
    cp "$base.ziphash" "$STAGE/gomodcache/${base#"$modcache/"}.ziphash"
    mkdir -p "$STAGE/gomodcache/${moddir#"$modcache/"}"
    find "$moddir" -maxdepth 1 -type f \( -name go.mod -o -name 'LICENSE*' \) -exec cp -t "$STAGE/gomodcache/${moddir#"$modcache/"}" {} +
  fi
  target="$STAGE/gomodcache/${dir#"$modcache/"}"
  mkdir -p "$target"
  find "$dir" -maxdepth 1 -type f ! -name '*_test.go' -exec cp -t "$target" {} +
  for f in $embeds; do
    mkdir -p "$target/$(dirname "$f")"
    cp "$dir/$f" "$target/$f"
  done
done < <(CGO_ENABLED=0 go list -deps -f '{{with .Module}}{{.GoMod}}|{{.Dir}}{{else}}|{{end}}|{{.Dir}}|{{join .EmbedFiles " "}}' \
  ./... github.com/janpfeifer/gonb/gonbui)
chmod -R u+w "$STAGE/gomodcache"

# --- pack ----------------------------------------------------------------------------------
t0=$(now)
raw=$(du -sh "$STAGE" | cut -f1)
tar -C "$STAGE" -cf - go bin gomodcache | xz -T0 -9 >"$BUNDLE/payload.tar.xz"
cp "$GPULAB_ROOT/scripts/gpu-notebooks-run.sh" "$BUNDLE/run.sh"
cp "$GPULAB_ROOT/scripts/gpu-lib.sh" "$BUNDLE/gpu-lib.sh"
chmod +x "$BUNDLE/run.sh"
echo "$COMMIT" >"$BUNDLE/COMMIT"
log "packed $raw into $(du -sh "$BUNDLE/payload.tar.xz" | cut -f1) in $(elapsed_since "$t0")"
echo "gpu-notebooks: $(du -sh "$BUNDLE" | cut -f1) in .gpu-nb/ (commit $COMMIT), built in $(elapsed_since "$START")"
echo "on the GPU machine, from the checkout: .gpu-nb/run.sh [notebooks/NN-name.ipynb ...]"
