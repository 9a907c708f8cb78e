#!/usr/bin/env bash
# Installs the model that scripts/train/gpu-train.sh packed on the GPU machine into
# datasets/models/lfm2-moe-tiny-go, checks that it holds at most 30 MB, and runs its Go tests
# (the CPU reference against transformers; the CUDA ones skip here):
#
#   scripts/train/install-model.sh DIR     DIR: the device reply's files_at, which holds
#                                          lfm2-moe-tiny-go.tar.xz.0, .1, ...
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
require_go

NAME=lfm2-moe-tiny-go
MAX_BYTES=30000000
DIR="${1:?usage: scripts/train/install-model.sh DIR (the directory holding $NAME.tar.xz.0, .1, ...)}"
DEST="$GPULAB_ROOT/datasets/models/$NAME"
shopt -s nullglob
parts=("$DIR/$NAME".tar.xz.[0-9])
((${#parts[@]} > 0)) || die "no $NAME.tar.xz.N in $DIR: did gpu-train.sh finish? (its train.log and reference.log say)"
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
cat "${parts[@]}" | xz -d | tar -x -C "$STAGE"
for f in config.json model.safetensors tokenizer.json generation_config.json README.md LICENSE loss_curve.csv \
  reference/logits.npy reference/greedy.json reference/heldout.json reference/agreement.json; do
  [[ -f "$STAGE/$NAME/$f" ]] || die "the packed model has no $f (a failed reference run? see reference.log)"
done
size="$(du -sb "$STAGE/$NAME" | cut -f1)"
((size <= MAX_BYTES)) || die "$NAME holds $size bytes, more than $MAX_BYTES: shrink the model (train_lfm2.py)"
rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
mv "$STAGE/$NAME" "$DEST"
log "installed $DEST ($((size / 1000000)) MB); testing it"
cd "$GPULAB_ROOT"
go test -count=1 -run 'Trained' -v ./engine/llm/lfm2
