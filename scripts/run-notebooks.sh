#!/usr/bin/env bash
# Executes GoNB notebooks headless and fails if any cell fails.
#
#   scripts/run-notebooks.sh                 # every notebooks/*.ipynb, then notebooks/exercises/*.ipynb
#   scripts/run-notebooks.sh NB.ipynb ...    # just these
#
# Each notebook runs in a fresh gonb kernel through
#   /usr/bin/python3 -m nbconvert --config scripts/nbconvert_gonb.py --to notebook --execute \
#     --ExecutePreprocessor.timeout=900 --ExecutePreprocessor.kernel_name=gonb NB \
#     --output-dir .build/notebooks[/SUBDIR]
# (NB_TIMEOUT overrides the 900 s per cell.)
# The committed notebook is never modified: the executed copy goes to the git-ignored .build/notebooks/
# (mirroring notebooks/ subfolders), and the kernel's log next to it as NAME.log. Exercise notebooks
# (notebooks/exercises/) run with the reference solution filled into their marked cell.
# scripts/nbconvert_gonb.py makes panics, os.Exit(n != 0) and failing `!` commands count as
# cell errors (GoNB itself only reports compile errors).
#
# The environment passes through to the notebooks: GPULAB_SIZES=... make test, for example.
#
# NOTEBOOK CONVENTION. The first cell of every notebook is exactly:
#
#   %noautoget
#   !*rm -f go.work && go work init && go work use . "$GPULAB_ROOT"
#   %goworkfix
#
#   %noautoget   GoNB would `go get` every import, which resolves @latest and fails behind our proxy;
#                all modules come from gpulab's go.mod instead (downloaded by `make deps`).
#   !*...        `!*` runs bash in GoNB's temporary module directory; bash expands $GPULAB_ROOT
#                from the kernel's environment. The go.work puts that module and this repo in one
#                workspace, so cells can `import "gpulab/engine/..."` and use go.mod's versions.
#   %goworkfix   adds go.mod replace lines for the workspace modules, which gopls/goimports need.
# GPULAB_ROOT is set by the gonb kernelspec that `make deps` registers (so it works however Jupyter is
# started) and exported by these scripts too.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TIMEOUT="${NB_TIMEOUT:-900}"   # seconds per cell
OUT_ROOT="$BUILD_DIR/notebooks"

# Notebooks to run: arguments, or all of them in order.
notebooks=()
if (($# > 0)); then
  for nb in "$@"; do
    [[ "$nb" == /* ]] || nb="$CALLER_PWD/$nb"
    [[ -f "$nb" ]] || die "no such notebook: $nb"
    notebooks+=("$(cd "$(dirname "$nb")" && pwd -P)/$(basename "$nb")")
  done
else
  for dir in notebooks notebooks/exercises; do
    [[ -d "$dir" ]] || continue
    while IFS= read -r nb; do notebooks+=("$GPULAB_ROOT/$nb"); done < <(
      find "$dir" -maxdepth 1 -name '*.ipynb' -type f | LC_ALL=C sort)
  done
fi

if ((${#notebooks[@]} == 0)); then
  log "no notebooks to run"
  echo "notebooks: 0 passed, 0 failed"
  exit 0
fi

passed=0
failed=0
failures=()
START=$(now)
for nb in "${notebooks[@]}"; do
  # Output directory: .build/notebooks/<path under notebooks/>, or .build/notebooks for others.
  rel="${nb#"$GPULAB_ROOT/notebooks/"}"
  [[ "$rel" == "$nb" ]] && rel="$(basename "$nb")"
  out_dir="$OUT_ROOT/$(dirname "$rel")"
  out_dir="${out_dir%/.}"
  name="$(basename "$nb" .ipynb)"
  mkdir -p "$out_dir"
  rm -f "$out_dir/$name.ipynb"
  log_file="$out_dir/$name.log"

  printf '%-50s ' "$rel"
  t0=$(now)
  # An exercise runs with the reference solution filled into its marked cell
  # (lab exercise-fill); the committed notebook keeps its TODO.
  run_nb="$nb"
  if [[ "$rel" == exercises/* ]]; then
    run_nb="$out_dir/.filled/$name.ipynb"
    mkdir -p "$out_dir/.filled"
    (cd "$GPULAB_ROOT" && go run ./lab exercise-fill "$nb" --out "$run_nb") >"$log_file" 2>&1 || run_nb=""
  fi
  if [[ -n "$run_nb" ]] && "$PY" -m nbconvert --config "$GPULAB_ROOT/scripts/nbconvert_gonb.py" \
      --to notebook --execute \
      --ExecutePreprocessor.timeout="$TIMEOUT" \
      --ExecutePreprocessor.kernel_name=gonb \
      "$run_nb" --output-dir "$out_dir" >>"$log_file" 2>&1; then
    printf 'PASS %8s\n' "$(elapsed_since "$t0")"
    passed=$((passed + 1))
  else
    printf 'FAIL %8s   (log: %s)\n' "$(elapsed_since "$t0")" "${log_file#"$GPULAB_ROOT/"}"
    failed=$((failed + 1))
    failures+=("$rel")
    # The failing cell, as reported by nbconvert_gonb.py; else (kernel died, timeout...) the log's
    # tail without GoNB's own log lines.
    if grep -q 'CellExecutionError: ' "$log_file"; then
      sed -n '/CellExecutionError: /,$p' "$log_file" | grep -v '^[IWE][0-9]\{4\} ' | sed 's/^/    /'
    else
      grep -v '^[IWE][0-9]\{4\} ' "$log_file" | tail -n 40 | sed 's/^/    /'
    fi
  fi
done

echo "notebooks took $(elapsed_since "$START")${failures[*]:+; failed: ${failures[*]}}"
echo "notebooks: $passed passed, $failed failed"
((failed == 0))
