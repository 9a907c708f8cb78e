#!/usr/bin/env bash
# Builds .gpu/, a self-contained bundle to run gpulab's tests on a GPU machine that has no Go:
#
#   .gpu/run.sh            runs every test binary (a copy of scripts/gpu-run.sh)
#   .gpu/gpu-lib.sh        functions run.sh uses: unpacking, NVIDIA's OpenCL (scripts/gpu-lib.sh)
#   .gpu/bin.tar.xz        the binaries, packed; run.sh unpacks them to:
#       tests/<import-path>.test   one static test binary per package with tests, the import path's
#                                  slashes as dashes (gpulab/engine/cuda -> gpulab-engine-cuda.test)
#       lab                        the lab CLI (if ./lab has Go code yet)
#       bwrap                      this machine's bubblewrap, for lab grade's sandbox (the GPU machines
#                                  have none; it needs only libc, libcap and libselinux there)
#   .gpu/MANIFEST          "<binary name> <package dir>" per line
#   .gpu/src/<package dir>/testdata   each package's testdata/; its binary runs in src/<package dir>
#   .gpu/src/kernels/      a copy of kernels/, for tests that read kernel sources from disk
#   .gpu/src/datasets/     the shipped data files (Matrix Market fixtures...), for tests that read them
#   .gpu/src/docs/results/ the recorded runs, for tests that read them (bench records, lessons)
#   .gpu/src/docs/*.md     the write-ups, for the tests that hold them to the recorded runs
#   .gpu/src/notebooks/    the lessons and exercises (no outputs), for tests that read them
#
# Everything is built with CGO_ENABLED=0 GOOS=linux GOARCH=amd64 (the GPU libraries are loaded at
# run time through purego), stripped (-s -w) and -trimpath'd. The binaries share most of their bytes
# (runtime, gonum, fonts), so one xz stream whose window spans them all (up to 384 MiB; packing then
# takes about 3 minutes and 4 GB of memory) packs them about 12x: 330 MB of binaries into 27 MB.
# A device runner that carries the working tree with the bundle (64 MiB at most) then takes it only
# without docs/executed: the tracked tree is 40 MB, 26 MB of it the trained model.
#
# Knob: PKGS (default ./...), the packages to look for tests in: make gpu-bundle PKGS=./engine/...
# A package whose tests do not compile is reported and skipped; the script then exits non-zero,
# but the bundle holds everything else.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_go

BUNDLE="$GPULAB_ROOT/.gpu"
STAGE="$BUILD_DIR/gpu-bin"   # unpacked binaries, packed into $BUNDLE/bin.tar.xz at the end
PKGS="${PKGS:-./...}"
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
# The commit goes into every binary, so that benchmark records made on the GPU machine (which has no
# git) say which code produced them.
COMMIT="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
[[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]] || COMMIT="$COMMIT-dirty"
BUILD_FLAGS=(-trimpath "-ldflags=-s -w -X gpulab/engine/bench.stampedCommit=$COMMIT")

START=$(now)
rm -rf "$BUNDLE" "$STAGE"
mkdir -p "$BUNDLE/src" "$STAGE/tests"
: >"$BUNDLE/MANIFEST"

built=0
broken=()
# shellcheck disable=SC2086  # PKGS is a list of patterns
while IFS=$'\t' read -r pkg dir; do
  [[ -n "$pkg" ]] || continue
  rel="${dir#"$GPULAB_ROOT"}"
  rel="${rel#/}"
  rel="${rel:-.}"
  name="${pkg//\//-}"
  printf '  %-40s ' "$pkg"
  t0=$(now)
  # -vet=off: go vet runs in `make test`; here it would only slow the build down.
  if go test -c -vet=off "${BUILD_FLAGS[@]}" -o "$STAGE/tests/$name.test" "./$rel" 2>"$STAGE/build.err"; then
    printf 'built %s\n' "$(elapsed_since "$t0")"
    built=$((built + 1))
    printf '%s %s\n' "$name" "$rel" >>"$BUNDLE/MANIFEST"
    mkdir -p "$BUNDLE/src/$rel"
    if [[ -d "$dir/testdata" ]]; then cp -r "$dir/testdata" "$BUNDLE/src/$rel/"; fi
  else
    printf 'BROKEN\n'
    sed 's/^/      /' "$STAGE/build.err"
    broken+=("$pkg")
  fi
  rm -f "$STAGE/build.err"
done < <(go list -e -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{"\t"}}{{.Dir}}{{end}}' $PKGS)

# Shipped data files (not the Go sources) for tests that read ../../datasets/...
# (not datasets/models/: the trained model's tests find the repository's copy, and a second copy
# would push the bundle past what the device runner carries)
if [[ -d datasets ]]; then
  (cd datasets && find . -path ./models -prune -o -type f ! -name '*.go' -print0 | while IFS= read -r -d '' f; do
    mkdir -p "$BUNDLE/src/datasets/$(dirname "$f")" && cp "$f" "$BUNDLE/src/datasets/$f"
  done)
fi
for dir in kernels docs/results notebooks; do
  if [[ -d "$dir" && -n "$(ls -A "$dir")" ]]; then
    mkdir -p "$BUNDLE/src/$dir"
    cp -r "$dir/." "$BUNDLE/src/$dir/"
  fi
done
# The write-ups, which lesson tests hold to the recorded runs (docs/kmeans.md lists each one).
cp docs/*.md "$BUNDLE/src/docs/"

if [[ -n "$(go list -e -f '{{.GoFiles}}' ./lab 2>/dev/null | tr -d '[]')" ]]; then
  printf '  %-40s ' "lab"
  t0=$(now)
  if go build "${BUILD_FLAGS[@]}" -o "$STAGE/lab" ./lab; then
    printf 'built %s\n' "$(elapsed_since "$t0")"
  else
    broken+=(./lab)
  fi
else
  warn "./lab has no Go code yet: the bundle has no lab binary"
fi

if command -v bwrap >/dev/null 2>&1; then
  cp "$(command -v bwrap)" "$STAGE/bwrap"
else
  warn "no bwrap here (make deps installs it): lab grade will run unsandboxed on the GPU machine"
fi

t0=$(now)
raw=$(du -sh "$STAGE" | cut -f1)
# The window: the binaries' total size in MiB, at least 8 and at most 384.
dict=$(du -sm "$STAGE" | cut -f1)
dict=$((dict < 8 ? 8 : dict > 384 ? 384 : dict))
tar -C "$STAGE" -cf - . | xz -T1 --lzma2=preset=6,dict=${dict}MiB >"$BUNDLE/bin.tar.xz"
cp "$GPULAB_ROOT/scripts/gpu-run.sh" "$BUNDLE/run.sh"
cp "$GPULAB_ROOT/scripts/gpu-lib.sh" "$BUNDLE/gpu-lib.sh"
chmod +x "$BUNDLE/run.sh"
log "packed $raw of binaries into $(du -sh "$BUNDLE/bin.tar.xz" | cut -f1) in $(elapsed_since "$t0")"

echo "gpu-bundle: $built test binaries$([[ -x "$STAGE/lab" ]] && echo " + lab"), $(du -sh "$BUNDLE" | cut -f1) in .gpu/, built in $(elapsed_since "$START")"
if ((${#broken[@]} > 0)); then
  warn "did not build: ${broken[*]}"
  exit 1
fi
echo "on the GPU machine: .gpu/run.sh [-test.run REGEXP ...]   (ONLY=REGEXP picks binaries)"
