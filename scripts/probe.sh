#!/usr/bin/env bash
# Replays a hostile-input probe of the lab command (issue #31): every case of scripts/probes/cases.tsv
# and, generated from scripts/probes/flags.tsv, every numeric flag of every command with NaN, +Inf,
# -Inf, a negative value, zero and a huge value. Each case runs lab once and is judged on
#   its outcome   ok (exit 0), usage (exit 2, a "lab ...:" line on stderr), error (exit 1, likewise),
#                 int or term (exit 130 or 143 after a SIGINT or SIGTERM sent to lab), or several
#                 joined by '|'; an optional extended regexp (case-insensitive) must match stderr
#                 (for ok: stdout or stderr);
# and on what every case must do, whatever the input:
#   - no Go panic, fatal error or goroutine dump on stdout or stderr;
#   - done within PROBE_LIMIT seconds (a hang is a failure), under an address-space limit of
#     PROBE_VMEM_KB (ulimit -v, soft, so that lab grade can set its own for its workers);
#   - no temporary (.NAME.tmp-*, *.part, gpulab-*) left in the case's scratch directory or TMPDIR;
#   - an output path that was a FIFO, a character device or a symbolic link still is one;
#   - no process of the case left running: none in its session, none with its marker in the
#     environment.
# Hostile inputs come from scripts/probes/fixtures/ (small, committed) and from
# scripts/probes/gen (run here: sparse files, floods, corrupted models), made into a work directory.
#
# cases.tsv columns (tab-separated; '-' for none): id, class, expect, needs, regexp, command.
# The command is lab's arguments, word-split as bash would (quotes group words; write no $ or
# backquote), led by optional VAR=value settings; placeholders: {S} the case's scratch directory,
# {G} the generated fixtures, {F} scripts/probes/fixtures, {R} the repository, {NL} a newline,
# {TAB} a tab, and {FIFO:name} {NULL:name} {FULL:name} {LINK:name} {DANGLING:name}: {S}/name made a
# FIFO (with a reader), a copy of /dev/null or /dev/full (mknod; the real device is never an
# output here), a symbolic link to a file, or a dangling one. expect int@N and term@N send the
# signal N seconds after the start. needs: gonb (lab nbrun's kernel), opencl (an OpenCL device), or
# '-'; a case whose need is missing is skipped.
#
# Knobs: PROBE (a regular expression: only the cases whose id matches), PROBE_JOBS (default: the
# cores), PROBE_LIMIT (default 60), PROBE_VMEM_KB (default 4000000), PROBE_KEEP=1 (keep the work
# directory, .build/probe/work, also after a run without failures).
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_go

PROBE="${PROBE:-.}"
PROBE_JOBS="${PROBE_JOBS:-$(nproc)}"
PROBE_LIMIT="${PROBE_LIMIT:-60}"
PROBE_VMEM_KB="${PROBE_VMEM_KB:-4000000}"
TABLES="$GPULAB_ROOT/scripts/probes"
OUT="$BUILD_DIR/probe"
LAB="$OUT/lab"
WORK="$OUT/work"
G="$WORK/gen"
F="$TABLES/fixtures"
RUN_ID="probe-$$-$(date +%s)"

log "building lab and the fixture generator"
mkdir -p "$OUT"
go build -o "$LAB" ./lab
go build -o "$OUT/gen" ./scripts/probes/gen
rm -rf "$WORK"
mkdir -p "$WORK/cases" "$WORK/results" "$G"

log "making the generated fixtures in ${G#"$GPULAB_ROOT"/}"
"$OUT/gen" "$G"
# Records that lab itself wrote, and a submission named with a newline.
"$LAB" bench copy --device cpu --size 64K --min-time 1ms --reps 1 --warmup 1 --json "$G/bench.json" >/dev/null
cp "$F/cl/nokernel.cl" "$G/odd/sub"$'\n'"mission.cl"

# What this machine has, for the cases' needs.
declare -A HAVE=()
if [[ -x "$GPULAB_ROOT/.tools/bin/gonb" ]] || command -v gonb >/dev/null; then HAVE[gonb]=1; fi
if "$LAB" devices 2>/dev/null | grep -q '^opencl:'; then HAVE[opencl]=1; fi
MKNOD=0
if mknod "$WORK/mknod-test" c 1 3 2>/dev/null; then MKNOD=1; fi
rm -f "$WORK/mknod-test"

# --- the cases ---------------------------------------------------------------------------------
ids=() classes=() expects=() needs=() regexps=() commands=()
add_case() {
  [[ "$1" =~ $PROBE ]] || return 0
  ids+=("$1") classes+=("$2") expects+=("$3") needs+=("$4") regexps+=("$5") commands+=("$6")
}
while IFS=$'\t' read -r id class expect need regexp command; do
  [[ -z "$id" || "$id" == \#* ]] && continue
  add_case "$id" "$class" "$expect" "$need" "$regexp" "$command"
done <"$TABLES/cases.tsv"

# flags.tsv: command, flag, kind, the outcome for each of the six values, base command. A flag of
# kind '-' is not numeric: it is listed so that the coverage check below knows it.
declare -A VALUES=(
  [int]="NaN +Inf -Inf -1 0 9223372036854775807"
  [uint]="NaN +Inf -Inf -1 0 18446744073709551615"
  [float]="NaN +Inf -Inf -1 0 1e308"
  [duration]="NaN +Inf -Inf -1s 0s 2562047h"
  [bytes]="NaN +Inf -Inf -1 0 1000000T"
)
VALUE_NAMES=(nan inf -inf negative zero huge)
declare -A DECLARED=() # command -> its flags in flags.tsv
while IFS=$'\t' read -r cmd flag kind o1 o2 o3 o4 o5 o6 base; do
  [[ -z "$cmd" || "$cmd" == \#* ]] && continue
  DECLARED[$cmd]+=" $flag"
  [[ "$kind" == - ]] && continue
  [[ -n "${VALUES[$kind]:-}" ]] || die "flags.tsv: $cmd --$flag: unknown kind '$kind'"
  read -ra vals <<<"${VALUES[$kind]}"
  outs=("$o1" "$o2" "$o3" "$o4" "$o5" "$o6")
  for i in "${!vals[@]}"; do
    # A refusal that is only a usage error must name the flag.
    re=-
    [[ "${outs[$i]}" == usage ]] && re="-$flag([^a-z0-9-]|\$)"
    add_case "flag.${cmd// /-}.$flag.${VALUE_NAMES[$i]}" flag-value "${outs[$i]}" - "$re" "$base --$flag=${vals[$i]}"
  done
done <"$TABLES/flags.tsv"

# --- running one case ----------------------------------------------------------------------------

# expand WORD DIR: sets EXPANDED to WORD with the placeholders replaced; special files are made in
# DIR and their paths appended to the caller's specials array (as "kind path"). Where a special
# file cannot be made safely, it fails with the reason in EXPANDED.
expand() {
  local w=$1 s=$2 kind name path
  w=${w//\{S\}/$s}
  w=${w//\{G\}/$G}
  w=${w//\{F\}/$F}
  w=${w//\{R\}/$GPULAB_ROOT}
  w=${w//\{NL\}/$'\n'}
  w=${w//\{TAB\}/$'\t'}
  while [[ "$w" =~ \{(FIFO|NULL|FULL|LINK|DANGLING):([^}]*)\} ]]; do
    kind=${BASH_REMATCH[1]} name=${BASH_REMATCH[2]} path="$s/${BASH_REMATCH[2]}"
    case "$kind" in
      FIFO)
        mkfifo "$path"
        specials+=("p $path")
        ;;
      NULL | FULL)
        if ((MKNOD)); then
          mknod "$path" c 1 "$([[ $kind == NULL ]] && echo 3 || echo 7)"
        elif ((EUID != 0)); then # a rename over the real device fails without root: safe
          path=/dev/${kind,,}
        else
          EXPANDED="SKIP cannot make a device node (mknod) and will not risk the real /dev/${kind,,}"
          return 1
        fi
        specials+=("c $path")
        ;;
      LINK)
        echo old >"$s/target-of-$name"
        ln -s "target-of-$name" "$path"
        specials+=("L $path")
        ;;
      DANGLING)
        ln -s "missing-dir/$name" "$path"
        specials+=("L $path")
        ;;
    esac
    w=${w/"${BASH_REMATCH[0]}"/$path}
  done
  EXPANDED=$w
}

# classify RC: the outcome class of an exit status.
classify() {
  case "$1" in
    0) echo ok ;; 1) echo error ;; 2) echo usage ;; 130) echo int ;; 143) echo term ;;
    124 | 137) echo hang ;; *) echo "rc$1" ;;
  esac
}

# leftovers DIR...: the temporaries a command must not leave.
leftovers() {
  { find "$@" \( -name '.*.tmp-*' -o -name '*.part' -o -name 'gpulab-*' \) -print 2>/dev/null || true; } | head -n 5
}

# strays SID MARKER: processes of the case still alive (zombies aside): in its session (the fields
# of /proc/PID/stat after the command's name are state, ppid, pgrp, session), or with its marker.
strays() {
  {
    cat /proc/[0-9]*/stat 2>/dev/null | awk -v sid="$1" '{ pid = $1; sub(/.*\) /, "") } $4 == sid && $1 != "Z" { print pid }'
    grep -l -s -z -x "PROBE_CASE=$2" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
  } | sort -u
}

# run_case I: runs case number I and writes its verdict to $WORK/results/ID: "PASS time",
# "SKIP why" or "FAIL outcome time" and the reasons, a line each.
run_case() {
  local i=$1 id=${ids[$1]} expect=${expects[$1]} need=${needs[$1]} regexp=${regexps[$1]}
  local dir="$WORK/cases/$id" res="$WORK/results/$id" w word rc outcome sig=0 delay=0
  local -a words=() args=() envs=() specials=() why=()
  if [[ "$need" != - && -z "${HAVE[$need]:-}" ]]; then
    echo "SKIP no $need here" >"$res"
    return
  fi
  mkdir -p "$dir/scratch" "$dir/tmp"
  set -f
  eval "words=(${commands[$i]})"
  set +f
  for word in "${words[@]}"; do
    if ! expand "$word" "$dir/scratch"; then
      echo "$EXPANDED" >"$res"
      return
    fi
    w=$EXPANDED
    if ((${#args[@]} == 0)) && [[ "$w" =~ ^[A-Z_][A-Z0-9_]*= ]]; then envs+=("$w"); else args+=("$w"); fi
  done
  case "$expect" in
    int@*) sig=INT delay=${expect#int@} expect=int ;;
    term@*) sig=TERM delay=${expect#term@} expect=term ;;
  esac
  local -a readers=()
  local s
  for s in "${specials[@]}"; do
    if [[ $s == "p "* ]]; then
      (while cat "${s#p }" >/dev/null; do :; done) 2>/dev/null & # quiet: its cat is killed below
      readers+=($!)
    fi
  done
  local t0=${EPOCHREALTIME/./} pid
  (
    cd "$dir/scratch"
    ulimit -S -v "$PROBE_VMEM_KB"
    exec setsid timeout -k 5 "$PROBE_LIMIT" env TMPDIR="$dir/tmp" PROBE_CASE="$RUN_ID/$id" "${envs[@]}" \
      "$LAB" "${args[@]}" >"$dir/stdout" 2>"$dir/stderr" </dev/null
  ) &
  pid=$!
  if [[ $sig != 0 ]]; then
    sleep "$delay"
    local lab_pid
    lab_pid=$(pgrep -P "$pid" || true)
    if [[ -n "$lab_pid" ]]; then kill -s "$sig" "$lab_pid" 2>/dev/null || true; fi
  fi
  rc=0
  wait "$pid" || rc=$?
  local took=$(((${EPOCHREALTIME/./} - t0) / 100000))
  took="$((took / 10)).$((took % 10))s"
  outcome=$(classify "$rc")
  for s in "${readers[@]}"; do
    pkill -P "$s" 2>/dev/null || true
    kill "$s" 2>/dev/null || true
  done

  # The expected outcome and message.
  if [[ "|$expect|" != *"|$outcome|"* ]]; then
    why+=("expected $expect, got $outcome (exit $rc) in $took")
  fi
  if [[ "$outcome" == usage || "$outcome" == error ]] && ! grep -q '^lab[ :]' "$dir/stderr"; then
    why+=("no 'lab ...:' line on stderr says what is wrong")
  fi
  if [[ "$regexp" != - ]]; then
    local where=("$dir/stderr")
    [[ "$outcome" == ok ]] && where+=("$dir/stdout")
    if ! grep -Eiq -e "$regexp" "${where[@]}"; then why+=("no line matches /$regexp/"); fi
  fi
  # What every case must do.
  local crash
  crash=$(grep -Ehm1 -e '^panic: ' -e 'fatal error: ' -e '^goroutine [0-9]+ \[' -e '\.go:[0-9]+ \+0x[0-9a-f]+$' \
    "$dir/stdout" "$dir/stderr" || true)
  [[ -z "$crash" ]] || why+=("crashed: $crash")
  local left
  left=$(leftovers "$dir/scratch" "$dir/tmp")
  [[ -z "$left" ]] || why+=("temporaries left: ${left//$'\n'/, }")
  local kind path
  for s in "${specials[@]}"; do
    read -r kind path <<<"$s"
    if ! test "-$kind" "$path"; then why+=("$path is no longer a $(
      case $kind in p) echo FIFO ;; c) echo character device ;; L) echo symbolic link ;; esac
    ): $(stat -c %F "$path" 2>&1 || true)"); fi
  done
  local -a alive=()
  for _ in {1..10}; do # a process that was sent a signal takes a moment to go
    mapfile -t alive < <(strays "$pid" "$RUN_ID/$id")
    ((${#alive[@]} == 0)) && break
    sleep 0.2
  done
  if ((${#alive[@]} > 0)); then
    why+=("processes left running: $(ps -o pid=,args= -p "$(
      IFS=,
      echo "${alive[*]}"
    )" | head -n 3 | tr '\n' ';' || true)")
    kill -KILL "${alive[@]}" 2>/dev/null || true
  fi
  if ((${#why[@]} == 0)); then
    echo "PASS $took" >"$res"
  else
    {
      echo "FAIL $outcome $took"
      printf '%s\n' "${why[@]}"
    } >"$res"
  fi
}

# check_flag_coverage: every flag that a command's help lists is in flags.tsv (a new numeric flag
# must get its row, and so its cases). Commands whose help is the same text (lab lfm2's
# subcommands) are checked together.
check_flag_coverage() {
  local cmd help flags f missing=() res="$WORK/results/flags.coverage"
  declare -A group_declared=() group_help=()
  for cmd in "${!DECLARED[@]}"; do
    # shellcheck disable=SC2086 # the command's words
    help=$("$LAB" $cmd --help 2>&1 || true)
    group_help[$help]=$cmd
    group_declared[$help]+="${DECLARED[$cmd]} "
  done
  for help in "${!group_help[@]}"; do
    if grep -qE '^  -[a-z]' <<<"$help"; then # flag.PrintDefaults
      flags=$(grep -oE '^  -[a-z][a-z0-9-]*' <<<"$help" | sed 's/^  -//')
    else # a usage text of its own
      flags=$(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$help" | cut -c3- | sort -u)
    fi
    for f in $flags; do
      [[ " ${group_declared[$help]} " == *" $f "* ]] || missing+=("lab ${group_help[$help]} --$f")
    done
  done
  if ((${#missing[@]} == 0)); then
    echo PASS >"$res"
  else
    {
      echo "FAIL unlisted flags"
      echo "not in scripts/probes/flags.tsv: ${missing[*]}"
    } >"$res"
  fi
}

# --- the run -------------------------------------------------------------------------------------
START=$(now)
log "${#ids[@]} cases, $PROBE_JOBS at a time, ${PROBE_LIMIT}s each at most (gonb: ${HAVE[gonb]:-no}, opencl: ${HAVE[opencl]:-no})"
# The slow cases (grading, signals) first, so that none of them is left to run alone at the end.
order=()
for i in "${!ids[@]}"; do
  if [[ "${commands[$i]}" == grade* || "${expects[$i]}" == *@* ]]; then order+=("$i"); fi
done
for i in "${!ids[@]}"; do
  if ! [[ "${commands[$i]}" == grade* || "${expects[$i]}" == *@* ]]; then order+=("$i"); fi
done
running=0
for i in "${order[@]}"; do
  if ((running >= PROBE_JOBS)); then
    wait -n || true
    running=$((running - 1))
  fi
  run_case "$i" &
  running=$((running + 1))
done
wait
all=("${ids[@]}")
if [[ "flags.coverage" =~ $PROBE ]]; then
  check_flag_coverage
  all+=(flags.coverage)
fi

# Nothing left in the generated fixtures or the committed ones, by any case.
left=$(leftovers "$G" "$F")
[[ -z "$left" ]] || {
  echo "FAIL temporaries"
  echo "temporaries left among the fixtures: ${left//$'\n'/, }"
} >"$WORK/results/fixtures.leftovers"
[[ -z "$left" ]] || all+=(fixtures.leftovers)

passed=0 failed=0 skipped=0
failures=()
for i in "${!all[@]}"; do
  id=${all[$i]}
  res=$(cat "$WORK/results/$id" 2>/dev/null || echo "FAIL no result")
  case "$res" in
    PASS*) passed=$((passed + 1)) ;;
    SKIP*) skipped=$((skipped + 1)) ;;
    *)
      failed=$((failed + 1))
      failures+=("$id")
      ;;
  esac
done
for id in "${failures[@]}"; do
  echo
  i=-1
  for j in "${!ids[@]}"; do [[ "${ids[$j]}" == "$id" ]] && i=$j; done
  if ((i >= 0)); then
    echo "FAIL $id (${classes[$i]}): lab ${commands[$i]}"
    echo "  expected ${expects[$i]}$([[ ${regexps[$i]} == - ]] || echo ", matching /${regexps[$i]}/")"
  else
    echo "FAIL $id"
  fi
  tail -n +2 "$WORK/results/$id" 2>/dev/null | sed 's/^/  /'
  if [[ -s "$WORK/cases/$id/stderr" ]]; then
    echo "  stderr:"
    head -n 4 "$WORK/cases/$id/stderr" | cut -c1-300 | sed 's/^/    | /'
  fi
done
echo
echo "probe: $((passed + failed)) inputs, $passed passed, $failed failed$( ((skipped == 0)) || echo ", $skipped skipped (a need missing here)") in $(elapsed_since "$START")"
if ((failed > 0)); then
  log "the cases' outputs are in ${WORK#"$GPULAB_ROOT"/}/cases/"
  exit 1
fi
[[ "${PROBE_KEEP:-0}" == 1 ]] || rm -rf "$WORK"
