#!/usr/bin/env bash
# Trains notebook 06's tiny LFM2-MoE and writes its references on a GPU machine, in one command:
# scripts/train/train_lfm2.py (the tokenizer, about 7 minutes of training, the model directory),
# then scripts/train/reference_lfm2.py (DIR/reference/), then packs the directory into $OUT.
# The GPU machine has Python with torch, transformers 5.17 and tokenizers, and no Go.
#
# First, here: scripts/train/corpus.sh   (writes .build/train/go-corpus.tar.xz, git-ignored)
# Then one device call from the repository root, on one H100 (about 9 minutes, the machine's start aside):
#
#   run  command:   bash scripts/train/gpu-train.sh
#        carry:     [".build/train/go-corpus.tar.xz"]
#        timeout_s: 600
#        kind:      nvidia-h100-x1 (or none)
#
# $OUT then holds train.log, reference.log and lfm2-moe-tiny-go.tar.xz.0, .1, ... (the directory,
# packed and cut into 15 MiB parts: the device tool returns files of at most 16 MiB). Back here:
#
#   scripts/train/install-model.sh FILES_AT   (the reply's files_at: unpacks into datasets/models/,
#                                              checks the size, runs the Go tests of the model)
#
#   bash scripts/train/gpu-train.sh [CORPUS]                 train, reference, pack
#   bash scripts/train/gpu-train.sh --reference-only [CORPUS] only the references, for the model
#        already in datasets/models/lfm2-moe-tiny-go (it travels with the working tree): same call
#
# The whole command is kept under 10 minutes: training stops 90 s before a deadline 570 s after the
# start (TRAIN_DEADLINE_S), whatever the tokenizer took. If the references fail, the trained model
# is packed all the same (and the command fails), so that --reference-only can redo them alone.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
NAME=lfm2-moe-tiny-go
MODE=train
if [[ "${1:-}" == --reference-only ]]; then
  MODE=reference
  shift
fi
CORPUS="${1:-$ROOT/.build/train/go-corpus.tar.xz}"
DEST="${OUT:-$ROOT/.build/train/out}"
DEADLINE=$(($(date +%s) + ${TRAIN_DEADLINE_S:-570}))
[[ -f "$CORPUS" ]] || { echo "gpu-train: no corpus at $CORPUS: build it with scripts/train/corpus.sh and carry it" >&2; exit 1; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$DEST"

export PYTHONUNBUFFERED=1 PYTHONHASHSEED=0 CUBLAS_WORKSPACE_CONFIG=:4096:8 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  TOKENIZERS_PARALLELISM=true
nvidia-smi -L || echo "gpu-train: nvidia-smi found no GPU"

if [[ "$MODE" == train ]]; then
  python3 "$ROOT/scripts/train/train_lfm2.py" --corpus "$CORPUS" --out "$WORK/$NAME" --deadline "$DEADLINE" 2>&1 |
    tee "$DEST/train.log"
else
  [[ -f "$ROOT/datasets/models/$NAME/model.safetensors" ]] || { echo "gpu-train: no model in datasets/models/$NAME" >&2; exit 1; }
  cp -r "$ROOT/datasets/models/$NAME" "$WORK/$NAME"
fi
reference=0
python3 "$ROOT/scripts/train/reference_lfm2.py" --model "$WORK/$NAME" --corpus "$CORPUS" 2>&1 |
  tee "$DEST/reference.log" || reference=$?

tar -C "$WORK" -cf - "$NAME" | xz -T0 -6 >"$WORK/$NAME.tar.xz"
split -b 15m -d -a 1 "$WORK/$NAME.tar.xz" "$DEST/$NAME.tar.xz."
ls -l "$DEST"
if ((reference != 0)); then
  echo "gpu-train: the references failed (exit $reference); the model is packed, see reference.log" >&2
  exit "$reference"
fi
