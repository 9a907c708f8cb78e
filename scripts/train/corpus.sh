#!/usr/bin/env bash
# Builds the training corpus of the tiny LFM2 that writes Go: the Go distribution's own source
# (BSD licence), packed small enough to carry to the GPU machine.
#
#   scripts/train/corpus.sh [OUT.tar.xz]     default: .build/train/go-corpus.tar.xz
#
# From $(go env GOROOT)/src it takes the .go files that people wrote: no testdata, no vendored
# packages, no generated files (a "Code generated ... DO NOT EDIT." line, or z*.go tables) and none
# over 256 KiB. It holds out whole packages for validation: every package whose import path hashes
# (cksum) to 0 mod 20, about 5%, goes to val/, the rest to train/, so that no file of a validation
# package was seen in training. It writes the list of files and the Go version next to them
# (SOURCE), and the Go licence (LICENSE).
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
require_go

OUT="${1:-$BUILD_DIR/train/go-corpus.tar.xz}"
GOSRC="$(go env GOROOT)/src"
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/train" "$STAGE/val" "$(dirname "$OUT")"

cd "$GOSRC"
find . -name '*.go' -size -256k \
  -not -path '*/testdata/*' -not -path './vendor/*' -not -path './cmd/vendor/*' -not -name 'z*.go' -print |
  LC_ALL=C sort |
  while IFS= read -r f; do
    head -c 4096 "$f" | grep -q '^// Code generated .* DO NOT EDIT\.$' && continue
    pkg="$(dirname "${f#./}")"
    split="train"
    if (($(printf '%s' "$pkg" | cksum | cut -d' ' -f1) % 20 == 0)); then split="val"; fi
    mkdir -p "$STAGE/$split/$pkg"
    cp "$f" "$STAGE/$split/$pkg/"
  done
cp "$GOSRC/../LICENSE" "$STAGE/LICENSE"
{
  echo "Go $(go env GOVERSION) source (src/ of $(go env GOROOT)), BSD licence: see LICENSE."
  echo "train: $(find "$STAGE/train" -name '*.go' | wc -l) files, $(find "$STAGE/train" -name '*.go' -print0 | du -cb --files0-from=- | tail -1 | cut -f1) bytes"
  echo "val:   $(find "$STAGE/val" -name '*.go' | wc -l) files, $(find "$STAGE/val" -name '*.go' -print0 | du -cb --files0-from=- | tail -1 | cut -f1) bytes, packages:"
  (cd "$STAGE/val" && find . -name '*.go' -printf '%h\n' | sed 's|^\./||' | LC_ALL=C sort -u | sed 's/^/  /')
} >"$STAGE/SOURCE"
tar -C "$STAGE" -cf - SOURCE LICENSE train val | xz -T0 -6 >"$OUT"
head -3 "$STAGE/SOURCE"
log "wrote $OUT ($(du -h "$OUT" | cut -f1))"
