#!/usr/bin/env bash
cd "$(dirname "$0")/.."
export GPULAB_ROOT=$PWD
R=$OUT; L=/tmp/b/lab
t() { echo "== $*" | cut -c1-160; local s=$SECONDS; "$@"; echo "== rc=$? in $((SECONDS-s)) s"; }
.gpu/run.sh --unpack-only /tmp/b >/dev/null
OUT= ONLY='engine-sparse$' t .gpu/run.sh >$R/sparse-tests.log 2>&1; tail -3 $R/sparse-tests.log; grep -- '--- FAIL' $R/sparse-tests.log | head
t $L sparse phases 'gen:rmat:scale=18,ef=8,a=0.57,b=0.19,c=0.19' --steps 04_binned,06_balanced --device cuda:0 2>&1 | grep -i 'total\|dense\|4096'
t $L bench spgemm --device cuda:0 --reps 3 --min-time 50ms --warmup 1 --json $R/spgemm.json >$R/spgemm.txt 2>&1; grep -i 'cusparse\|04_b\|06_b' $R/spgemm.txt | cut -c1-150
