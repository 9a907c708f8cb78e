#!/usr/bin/env bash
cd "$(dirname "$0")/.."
export GPULAB_ROOT=$PWD
R=$OUT; L=/tmp/b/lab
t() { echo "== $*" | cut -c1-160; local s=$SECONDS; "$@"; echo "== rc=$? in $((SECONDS-s)) s"; }
nvidia-smi --query-gpu=name --format=csv,noheader
.gpu/run.sh --unpack-only /tmp/b >/dev/null
t $L sparse phases 'gen:rmat:scale=18,ef=8,a=0.57,b=0.19,c=0.19' --steps 04_binned,06_balanced --device cuda:0 --json $R/h200-spgemm-phases-rmat.json 2>&1 | grep -i 'total\|dense'
t $L bench spgemm --device cuda:0 --reps 3 --min-time 50ms --warmup 1 --json $R/h200-spgemm-cuda.json >$R/spgemm.txt 2>&1; grep -i 'cusparse\|04_b\|06_b' $R/spgemm.txt | cut -c1-150
