#!/usr/bin/env bash
# gpulab test runner for a GPU machine without Go. `make gpu-bundle` copies this file to .gpu/run.sh
# next to the packed binaries; run it from anywhere:
#
#   .gpu/run.sh                              every test binary, verbose
#   .gpu/run.sh -test.run GEMM -test.bench . extra arguments go to every binary
#   ONLY=engine-cuda .gpu/run.sh             only binaries whose name matches the regexp
#   JOBS=6 .gpu/run.sh                       six binaries at once (the slowest first: LONG_FIRST)
#   SPLIT='NAME:REGEXP ...' .gpu/run.sh      run binary NAME as two processes: the tests matching
#                                            REGEXP, and the rest (default: lab's TestGradeCUDA apart)
#   DEADLINE=540 .gpu/run.sh                 stop at 540 s: binaries still running are killed (KILLED,
#                                            with the tests they were in), those not started read NOT-RUN
#   .gpu/run.sh --unpack-only [DIR]          just unpack lab, bwrap and tests/*.test into DIR (default .gpu)
#   .gpu/run.sh --sanitize [ARGS...]         every binary's tests under compute-sanitizer (below)
#
# --sanitize runs each binary's tests whose names match SANITIZE_RUN (default: all of them; the GPU
# tests of several families are not named for CUDA) and not SANITIZE_SKIP (default: DiagnosisOnGPU,
# which runs compute-sanitizer itself, and the tests named ...APIError, which make a CUDA call fail on
# purpose) under compute-sanitizer, once per tool in SANITIZE_TOOLS (default: memcheck with its leak
# check, racecheck, synccheck, initcheck), and prints a line per binary and tool with the errors the
# tool counted (its "ERROR SUMMARY", summed over the processes it followed); "no-cuda" where the
# tests passed without a CUDA call (the sanitizer then says "terminated before first instrumented
# API call"). Knobs:
#   SANITIZE_EACH     a regexp of binaries whose tests are spread over several processes, so that
#                     one binary's slow tests share the GPU side by side (default: the seven with the
#                     slowest GPU tests: kmeans, lfm2, exercise, sparse, sqfd, gemm, warps)
#   SANITIZE_GROUPS   G processes for each of those binaries, each with every G-th test (default 6;
#                     0: a process a test, which costs seconds each to start under the sanitizer)
#   SANITIZE_JOBS     processes at once (default: the CPU count)
#   SANITIZE_TIMEOUT  seconds one process may run (default: no limit); one killed reads TIMEOUT
#   SANITIZE_DEADLINE seconds the whole pass may run (default: no limit): a process still running
#                     then is killed (TIMEOUT), one not yet started reads NOT-RUN, and the summary
#                     still comes out, so that a pass under a hard wall-clock limit reports what ran
#   SANITIZE_EXCLUDE  compute-sanitizer filters of kernels not to check, each TOOL:FILTER (that tool
#                     only) or FILTER (every tool). By default racecheck and initcheck skip cuSPARSE,
#                     the peer the sparse lessons time against (kns=cusparse: racecheck reports
#                     hazards inside its csrmv kernels); memcheck and synccheck check it too. Skip no
#                     library whose outputs our kernels read under initcheck: the stores of a kernel
#                     it skips are not tracked, and reading them is then reported (cuBLAS's C).
# Each process has GPULAB_SANITIZE set to its tool: the slowest GPU tests then run smaller problems,
# and the exercises time small ones (cuda.Sanitized).
# A failing line is followed by the test in which the first report came and its first lines.
# It exits non-zero if any tool counted an error or a test failed. With $OUT set, each run's report
# goes to $OUT/sanitize/<binary>.<tool>[.<test>].log, and a line per process to units.txt there.
#
# It first unpacks bin.tar.xz into a temporary directory, removed at exit.
# Each binary runs with -test.v -test.count=1 in its package's directory in the bundle (where its
# testdata/ is), with GPULAB_ROOT pointing at the bundle's src/ (which has kernels/).
# If $OUT is set, the binaries' output goes to $OUT/gpu-tests.log, one section per binary (the tail is
# shown here on failure), and the summary to $OUT/summary.txt; otherwise the output streams here.
# Prints PASS/FAIL per binary and "gpu-bundle: N passed, M failed"; exits non-zero if any failed.
set -uo pipefail

BUNDLE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
export GPULAB_ROOT="$BUNDLE/src"
ONLY="${ONLY:-.}"

now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }
elapsed_since() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.1fs", e - s }'; }

# unpack and gpu_setup (scripts/gpu-lib.sh, copied next to run.sh).
# shellcheck source=scripts/gpu-lib.sh
source "$BUNDLE/gpu-lib.sh"

# Unpack the binaries (about a second) into a temporary directory, removed at exit, so that the
# bundle stays small enough to copy around; with --unpack-only, into DIR (default: the bundle).
if [[ "${1:-}" == --unpack-only ]]; then
  dir="${2:-$BUNDLE}"
  mkdir -p "$dir"
  unpack "$BUNDLE/bin.tar.xz" "$dir"
  echo "unpacked into $dir: lab, bwrap, tests/*.test (GPULAB_BWRAP=$dir/bwrap lets lab grade use that bwrap)"
  exit 0
fi
BIN="$(mktemp -d "${TMPDIR:-/tmp}/gpulab-bundle.XXXXXX")"
trap 'rm -rf "$BIN"' EXIT
unpack "$BUNDLE/bin.tar.xz" "$BIN"
# lab grade's sandbox runs bwrap as uid 65534 (nobody), which must be able to reach it.
chmod 755 "$BIN"
if [[ -x "$BIN/bwrap" ]]; then export GPULAB_BWRAP="$BIN/bwrap"; fi

gpu_setup

if [[ "${1:-}" == --sanitize ]]; then
  shift
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  [[ -x "$sanitizer" ]] || { echo "run.sh --sanitize: no compute-sanitizer on PATH or in /usr/local/cuda/bin" >&2; exit 1; }
  read -r -a tools <<<"${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}"
  read -r -a excludes <<<"${SANITIZE_EXCLUDE-racecheck:kns=cusparse initcheck:kns=cusparse}"
  each="${SANITIZE_EACH-^gpulab-engine-(cluster-kmeans|llm-lfm2|exercise|sparse|sqfd|gemm|warps)\$}"
  jobs="${SANITIZE_JOBS:-$(nproc)}"
  limit="${SANITIZE_TIMEOUT:-0}"
  deadline="${SANITIZE_DEADLINE:-0}"
  groups="${SANITIZE_GROUPS:-6}"
  for knob in limit deadline groups; do
    [[ "${!knob}" =~ ^[0-9]+$ ]] || { echo "run.sh --sanitize: SANITIZE_${knob^^}=${!knob}: want a whole number" >&2; exit 2; }
  done
  ((deadline > 0)) && deadline=$((SECONDS + deadline))
  logs="${OUT:-$BIN}/sanitize"
  mkdir -p "$logs" "$BIN/units"
  # Units of work: "tool binary dir test" (test "." for all of the binary's tests at once).
  units=()
  while read -r name rel <&3; do
    [[ -n "$name" && "$name" =~ $ONLY ]] || continue
    tests=(.)
    if [[ "$name" =~ $each ]]; then
      mapfile -t tests < <(cd "$BUNDLE/src/$rel" && "$BIN/tests/$name.test" -test.list "${SANITIZE_RUN:-.}" |
        grep -E '^(Test|Fuzz)' | grep -Ev "${SANITIZE_SKIP:-DiagnosisOnGPU|APIError}")
    fi
    if [[ "${tests[0]}" != . ]] && ((groups > 0 && groups < ${#tests[@]})); then
      # Group k: the tests k, k+G, k+2G... as one -test.run alternation.
      grouped=()
      for ((k = 0; k < groups; k++)); do
        alt=""
        for ((j = k; j < ${#tests[@]}; j += groups)); do alt+="${alt:+|}${tests[$j]}"; done
        grouped+=("($alt)")
      done
      tests=("${grouped[@]}")
    fi
    for tool in "${tools[@]}"; do
      for t in "${tests[@]}"; do units+=("$tool $name $rel $t"); done
    done
  done 3<"$BUNDLE/MANIFEST"
  # sanitize_unit I ARGS...: runs unit I; writes "errors state seconds" to units/I and its log.
  sanitize_unit() {
    local i=$1 tool name rel t log t0 rc errors state run opts limit=$limit
    read -r tool name rel t <<<"${units[$i]}"
    shift
    log="$logs/$name.$tool.log"
    run="${SANITIZE_RUN:-.}"
    if [[ "$t" != . ]]; then log="$logs/$name.$tool.$(printf '%s' "$t" | tr -c 'A-Za-z0-9_\n' '_' | cut -c1-80).log" run="^$t\$"; fi
    opts=(--tool "$tool" --print-limit 100)
    [[ "$tool" == memcheck ]] && opts+=(--leak-check full)
    for x in "${excludes[@]+"${excludes[@]}"}"; do
      case "$x" in
        "$tool":*) opts+=(--kernel-name-exclude "${x#*:}") ;;
        *:*=*) ;; # another tool's
        *) opts+=(--kernel-name-exclude "$x") ;;
      esac
    done
    t0=$(now)
    if ((deadline > 0)); then
      # What is left of the pass's deadline, if that is sooner than the unit's own limit.
      local left=$((deadline - SECONDS))
      if ((left <= 0)); then
        echo "0 NOT-RUN 0s $log" >"$BIN/units/$i"
        return
      fi
      ((limit == 0 || left < limit)) && limit=$left
    fi
    (cd "$BUNDLE/src/$rel" && GPULAB_SANITIZE="$tool" timeout -k 10 "$limit" "$sanitizer" "${opts[@]}" "$BIN/tests/$name.test" -test.v -test.count=1 \
      -test.timeout 0 -test.run "$run" -test.skip "${SANITIZE_SKIP:-DiagnosisOnGPU|APIError}" "$@") </dev/null >"$log" 2>&1
    rc=$?
    # "ERROR SUMMARY: N errors" per process; not its "N errors were not printed" past the print limit.
    errors=$(awk '/ERROR SUMMARY: [0-9]+ errors?$/ { n += $4 } END { print n + 0 }' "$log")
    state=ok
    if ((errors > 0)); then
      state=ERRORS
    elif ((rc == 124 || rc == 137)); then
      state=TIMEOUT
    elif grep -q '^PASS$' "$log" && grep -q 'terminated before first instrumented API call' "$log"; then
      state=no-cuda # the tests passed without a CUDA call, so there was nothing to check
    elif ((rc != 0)); then
      state="FAIL"
    fi
    echo "$errors $state $(elapsed_since "$t0") $log" >"$BIN/units/$i"
  }
  running=0
  for i in "${!units[@]}"; do
    if ((running >= jobs)); then
      wait -n
      running=$((running - 1))
    fi
    sanitize_unit "$i" "$@" &
    running=$((running + 1))
  done
  wait
  # Every unit's result, for finding the slow tests: $OUT/sanitize/units.txt.
  for i in "${!units[@]}"; do
    read -r tool name _ t <<<"${units[$i]}"
    read -r errors state took _ <"$BIN/units/$i"
    printf '%s %s %s %s %s %s\n' "$tool" "$name" "$t" "$errors" "$state" "$took"
  done >"$logs/units.txt"
  # A line per binary and tool: errors summed over its units, the worst state, the slowest unit's
  # time (units run side by side); then each failing unit's test and first report lines.
  severity() { case "$1" in ERRORS) echo 4 ;; FAIL) echo 3 ;; TIMEOUT) echo 2 ;; NOT-RUN) echo 1 ;; *) echo 0 ;; esac }
  dirty=0
  for tool in "${tools[@]}"; do
    while read -r name rel <&3; do
      [[ -n "$name" && "$name" =~ $ONLY ]] || continue
      sum=0 state=no-cuda slowest=0 bad=()
      for i in "${!units[@]}"; do
        read -r ut un _ _ <<<"${units[$i]}"
        [[ "$ut" == "$tool" && "$un" == "$name" ]] || continue
        read -r errors ustate took log <"$BIN/units/$i"
        sum=$((sum + errors))
        slowest=$(awk -v a="$slowest" -v b="${took%s}" 'BEGIN { print (b > a) ? b : a }')
        case "$ustate" in
          ok) [[ "$state" == no-cuda ]] && state=ok ;;
          no-cuda) ;;
          *)
            # The worst state names the line: ERRORS, then FAIL, TIMEOUT, NOT-RUN.
            (($(severity "$ustate") > $(severity "$state"))) && state="$ustate"
            [[ "$ustate" == NOT-RUN ]] || bad+=("$log")
            ;;
        esac
      done
      printf '%-8s %-10s %-40s %6d errors %7ss\n' "$state" "$tool" "$name" "$sum" "$slowest"
      [[ "$state" == ok || "$state" == no-cuda ]] && continue
      dirty=1
      for log in "${bad[@]+"${bad[@]}"}"; do
        # The test running when the first report came: the last "=== RUN" line before it.
        awk -v f="$log" '/^=== RUN/ { t = $3 } /^========= [A-Z]/ && !/COMPUTE-SANITIZER|ERROR SUMMARY/ && !shown {
          printf "    %s, in %s:\n", f, (t == "" ? "its tests" : t); shown = 1 }
          shown && /^=========/ && n < 12 { print "    " $0; n++ }
          END { if (!shown) { printf "    %s: no report; its tail:\n", f; exit 1 } }' "$log" ||
          tail -n 15 "$log" | sed 's/^/    /'
      done
    done 3<"$BUNDLE/MANIFEST"
  done
  exit "$dirty"
fi

if [[ -n "${OUT:-}" ]]; then
  mkdir -p "$OUT"
  : >"$OUT/gpu-tests.log"
fi
JOBS="${JOBS:-1}"
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: JOBS=$JOBS: want a positive number of binaries at once" >&2; exit 2; }
deadline="${DEADLINE:-0}"
[[ "$deadline" =~ ^[0-9]+$ ]] || { echo "run.sh: DEADLINE=$deadline: want whole seconds" >&2; exit 2; }
((deadline > 0)) && deadline=$((SECONDS + deadline))
# SPLIT: NAME:REGEXP pairs; binary NAME runs as two processes side by side, the tests that match
# REGEXP and the rest (default: lab's TestGradeCUDA, which alone takes minutes, apart).
read -r -a splits <<<"${SPLIT-gpulab-lab:^TestGradeCUDA\$}"
names=() # a line each: the binary's name, or NAME[REGEXP] and NAME[rest] where it is split
bins=()
rels=()
filters=()
while read -r name rel <&3; do
  [[ -n "$name" && "$name" =~ $ONLY ]] || continue
  re=""
  for s in "${splits[@]+"${splits[@]}"}"; do [[ "${s%%:*}" == "$name" ]] && re="${s#*:}"; done
  if [[ -n "$re" ]]; then
    names+=("${name}[$re]" "${name}[rest]")
    bins+=("$name" "$name")
    rels+=("$rel" "$rel")
    filters+=("-test.run=$re" "-test.skip=$re")
  else
    names+=("$name")
    bins+=("$name")
    rels+=("$rel")
    filters+=("")
  fi
done 3<"$BUNDLE/MANIFEST"

# run_binary I: runs binary I with -test.v; its output goes to $BIN/NAME.log (to the terminal when it
# streams: one binary at a time and no $OUT), its exit status to NAME.rc, its wall time to NAME.took.
# With DEADLINE, a binary not started by then reads NOT-RUN, and one still running is killed then.
run_binary() {
  local i=$1 name=${names[$1]} bin=${bins[$1]} t0 limit=() filter=()
  t0=$(now)
  shift
  if ((deadline > 0)); then
    local left=$((deadline - SECONDS))
    if ((left <= 0)); then
      echo not-run >"$BIN/$name.rc"
      echo 0s >"$BIN/$name.took"
      return
    fi
    limit=(timeout -k 5 "$left")
  fi
  [[ -z "${filters[$i]}" ]] || filter=("${filters[$i]}")
  if [[ -z "${OUT:-}" ]] && ((JOBS == 1)); then
    echo "=== $name"
    (cd "$BUNDLE/src/${rels[$i]}" && "${limit[@]+"${limit[@]}"}" "$BIN/tests/$bin.test" -test.v -test.count=1 "${filter[@]+"${filter[@]}"}" "$@") </dev/null
  else
    (cd "$BUNDLE/src/${rels[$i]}" && "${limit[@]+"${limit[@]}"}" "$BIN/tests/$bin.test" -test.v -test.count=1 "${filter[@]+"${filter[@]}"}" "$@") </dev/null >"$BIN/$name.log" 2>&1
  fi
  echo "$?" >"$BIN/$name.rc"
  elapsed_since "$t0" >"$BIN/$name.took"
}

# report I: binary I's PASS/FAIL line, and with $OUT its section of gpu-tests.log (and its tail here
# if it failed).
passed=0
failed=0
lines=()
report() {
  local name=${names[$1]} rc took line
  rc=$(cat "$BIN/$name.rc")
  took=$(cat "$BIN/$name.took")
  if [[ "$rc" == not-run ]]; then
    line="$(printf 'NOT-RUN %-38s %8s  (DEADLINE passed before it started)' "$name" "$took")"
    failed=$((failed + 1))
  elif ((rc == 0)); then
    line="$(printf 'PASS  %-40s %8s' "$name" "$took")"
    passed=$((passed + 1))
  elif ((deadline > 0 && (rc == 124 || rc == 137))) && [[ -f "$BIN/$name.log" ]]; then
    # Killed at the deadline: name the test it started last (its subtests' end lines come only
    # when the whole test ends).
    line="$(printf 'KILLED %-39s %8s  (DEADLINE; last started %s)' "$name" "$took" "$(awk '/^=== RUN/ { t = $3 } END { print t }' "$BIN/$name.log")")"
    failed=$((failed + 1))
  else
    line="$(printf 'FAIL  %-40s %8s  (exit %d)' "$name" "$took" "$rc")"
    failed=$((failed + 1))
  fi
  echo "$line"
  lines+=("$line")
  if [[ -f "$BIN/$name.log" ]]; then
    if [[ -n "${OUT:-}" ]]; then { echo "=== $name: $line"; cat "$BIN/$name.log"; echo; } >>"$OUT/gpu-tests.log"; fi
    if ((rc != 0)); then tail -n 40 "$BIN/$name.log" | sed 's/^/    /'; fi
  fi
}

START=$(now)
if ((JOBS == 1)); then
  for i in "${!names[@]}"; do
    run_binary "$i" "$@"
    report "$i"
  done
else
  # JOBS binaries at once, the slowest known first (LONG_FIRST, a regexp of names), so that the run
  # lasts about as long as its longest binary; the lines come in MANIFEST order at the end.
  long_first="${LONG_FIRST:-^gpulab-(lab|engine-exercise|engine-gemm|engine-sparse|engine-warps)$}"
  order=()
  for i in "${!names[@]}"; do [[ "${bins[$i]}" =~ $long_first ]] && order+=("$i"); done
  for i in "${!names[@]}"; do [[ "${bins[$i]}" =~ $long_first ]] || order+=("$i"); done
  running=0
  for i in "${order[@]}"; do
    if ((running >= JOBS)); then
      wait -n
      running=$((running - 1))
    fi
    run_binary "$i" "$@" &
    running=$((running + 1))
  done
  wait
  for i in "${!names[@]}"; do report "$i"; done
fi

result="gpu-bundle: $passed passed, $failed failed"
echo "total $(elapsed_since "$START")"
echo "$result"
if [[ -n "${OUT:-}" ]]; then
  { printf '%s\n' "${lines[@]}"; echo "$result"; } >"$OUT/summary.txt"
fi
if ((passed + failed == 0)); then
  echo "run.sh: no test binary matched ONLY='$ONLY'" >&2
  exit 1
fi
((failed == 0))
