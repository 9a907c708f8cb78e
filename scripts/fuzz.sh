#!/usr/bin/env bash
# Runs every Go fuzz target of the module, one at a time, each for FUZZTIME, and says which found
# something. The targets are found by `go test -list '^Fuzz'`, so a new FuzzXxx next to a parser
# is picked up with no change here. Seed corpora (f.Add and testdata/fuzz/FuzzXxx/) already run as
# ordinary tests in `make test`; this is the long run that mutates them.
#
# A target that finds a failing input writes it to its package's testdata/fuzz/FuzzXxx/ (go test
# does): fix the code, keep the file as the regression test, and rerun it alone with
#   go test -run 'FuzzXxx/<file>' ./<package>
#
# Knobs: FUZZTIME (default 30s; a duration, or Nx for N inputs), FUZZ (a regular expression: only
# the targets whose name matches, e.g. FUZZ=NPY), FUZZMINIMIZETIME (default 100x: go test's own
# default, 60s, is spent shrinking every input that reaches new code before fuzzing goes on, and
# with seeds of some kilobytes, a tokenizer.json or a notebook, that was nearly all of FUZZTIME).
# Each run's output is kept in .build/fuzz/.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_go

FUZZTIME="${FUZZTIME:-30s}"
FUZZ="${FUZZ:-.}"
FUZZMINIMIZETIME="${FUZZMINIMIZETIME:-100x}"
LOG_DIR="$BUILD_DIR/fuzz"
mkdir -p "$LOG_DIR"
cd "$GPULAB_ROOT"

# `go test -list` prints a package's matching names, then "ok  <package> <time>" for it. A package
# whose tests do not build is reported and fails the run; the others' targets still run.
log "listing the fuzz targets"
status=0
if ! list="$(go test -list '^Fuzz' ./... 2>&1)"; then
  grep -E '^(FAIL|#)|: ' <<<"$list" >&2 || true
  warn "some packages' tests do not build (above): their fuzz targets are not run"
  status=1
fi
targets=() # "package target"
names=()
while read -r first second _; do
  case "$first" in
    Fuzz*) names+=("$first") ;;
    ok)
      for n in "${names[@]}"; do
        if [[ "$n" =~ $FUZZ ]]; then targets+=("$second $n"); fi
      done
      names=()
      ;;
  esac
done <<<"$list"
((${#targets[@]} > 0)) || die "no fuzz target matches FUZZ='$FUZZ'"
log "${#targets[@]} fuzz targets, ${FUZZTIME} each"

summary=()
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  out="$LOG_DIR/${pkg//\//_}.$name.log"
  log "$pkg $name"
  t0=$(now)
  corpus="$(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$name"
  before="$(ls "$corpus" 2>/dev/null || true)"
  if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg" >"$out" 2>&1; then
    result="ok"
  elif [[ "$(ls "$corpus" 2>/dev/null || true)" == "$before" ]] && tail -n 5 "$out" | grep -q '^    context deadline exceeded$'; then
    # Go's fuzzing coordinator (before go1.27, golang/go#75804) can report its own -fuzztime
    # deadline as a failure when it fires while a worker is mid-input: no input failed, and none
    # was written to testdata/fuzz/.
    result="ok (Go's deadline race)"
  else
    result="FOUND SOMETHING"
    status=1
    tail -n 30 "$out" >&2
  fi
  # The last progress line has the time spent fuzzing (after the build and the seeds) and the
  # inputs tried.
  fuzzed="$(grep -o 'elapsed: [0-9hms]*, execs: [0-9]*' "$out" | tail -n 1 || true)"
  summary+=("$(printf '%-36s %-24s %-15s %7s in all  %s' "$pkg" "$name" "$result" "$(elapsed_since "$t0")" \
    "${fuzzed:-no fuzzing reported}")")
  if [[ "$result" == "FOUND SOMETHING" ]]; then
    summary+=("    $(grep -m1 -o 'testdata/fuzz/[^ ]*' "$out" || echo "see $out")")
  fi
done

log "fuzzing summary (FUZZTIME=$FUZZTIME; logs in ${LOG_DIR#"$GPULAB_ROOT"/})"
printf '%s\n' "${summary[@]}" >&2
if ((status)); then
  die "a fuzz target found a failing input (its package's testdata/fuzz/ holds it), or a package did not build"
fi
