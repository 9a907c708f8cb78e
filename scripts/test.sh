#!/usr/bin/env bash
# Everything `make test` checks, in order: the gates (gofmt, staticcheck, shellcheck), go vet, go test,
# the hostile-input probe of lab (scripts/probe.sh), then every notebook executed headless (scripts/run-notebooks.sh). A failing stage does not stop the next ones; the script fails at the
# end if any stage failed, after a summary with the time of each stage.
#
# Assumes the dependencies are installed (make test runs `make deps` first).
# Knobs: GOTESTFLAGS (e.g. "-count=1 -run TestGEMM"), and whatever the notebooks read (GPULAB_SIZES...).
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_go

summary=()
status=0

# run_stage NAME CMD...: runs CMD, records "NAME ok|FAILED (time)".
run_stage() {
  local name=$1 t0
  shift
  log "$name"
  t0=$(now)
  if "$@"; then
    summary+=("$(printf '%-10s ok      %s' "$name" "$(elapsed_since "$t0")")")
  else
    summary+=("$(printf '%-10s FAILED  %s' "$name" "$(elapsed_since "$t0")")")
    status=1
  fi
}

# gofmt_clean: no Go file of the repository that gofmt would change.
# shellcheck disable=SC2317  # called through run_stage
gofmt_clean() {
  local go_files changed
  mapfile -t go_files < <(git ls-files '*.go')
  changed=$(gofmt -l "${go_files[@]}")
  [[ -z "$changed" ]] || { echo "gofmt would change:"; echo "$changed"; return 1; }
}

# check_scripts: every shell script of the repository, and .ci/run, passes shellcheck.
# shellcheck disable=SC2317  # called through run_stage
check_scripts() {
  local scripts
  mapfile -t scripts < <(git ls-files '*.sh' .ci/run)
  shellcheck -x "${scripts[@]}"
}

START=$(now)
log "$(go version), $(nproc) cores, HOME=$HOME"
run_stage gofmt gofmt_clean
# staticcheck is pinned as a tool in go.mod; its checks are its defaults (no exceptions).
run_stage staticcheck go tool staticcheck ./...
run_stage shellcheck check_scripts
# `go vet ./...` and `go test ./...` fail when the module has no packages yet.
if [[ -n "$(go list -e ./... 2>/dev/null)" ]]; then
  run_stage "go vet" go vet ./...
  # -timeout: lab's grading tests time each exercise's reference solution first and scale their
  # limits to it, so on a slow machine they take longer than go test's default 10 minutes a package.
  # shellcheck disable=SC2086  # GOTESTFLAGS is a list of flags
  run_stage "go test" go test -timeout 60m ${GOTESTFLAGS:-} ./...
  # The CPU GEMM ladder's step 07 uses Go 1.26's experimental simd/archsimd, which exists only in
  # builds with GOEXPERIMENT=simd (amd64): test that build of the package too.
  if [[ "$(go env GOARCH)" == amd64 ]]; then
    # shellcheck disable=SC2086
    run_stage "simd test" env GOEXPERIMENT=simd go test ${GOTESTFLAGS:-} -run CPU ./engine/gemm
  fi
  # Issue #31's hostile inputs replayed against the lab binary (scripts/probes/cases.tsv, flags.tsv).
  run_stage probe "$GPULAB_ROOT/scripts/probe.sh"
else
  log "no Go packages yet: skipping go vet and go test"
fi
run_stage notebooks "$GPULAB_ROOT/scripts/run-notebooks.sh"

echo
echo "test summary:"
printf '  %s\n' "${summary[@]}"
echo "  total      $( ((status == 0)) && echo "ok    " || echo FAILED)  $(elapsed_since "$START")"
exit "$status"
