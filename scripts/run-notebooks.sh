#!/usr/bin/env bash
# Executes GoNB notebooks headless and fails if any cell fails.
#
#   scripts/run-notebooks.sh                 # every notebooks/*.ipynb, then notebooks/exercises/*.ipynb
#   scripts/run-notebooks.sh NB.ipynb ...    # just these
#
# Each notebook runs in a fresh GoNB kernel through gpulab's own Jupyter client (no Python):
#   lab nbrun NB --out .build/notebooks[/SUBDIR] --timeout 900s --log .build/notebooks/NAME.kernel.log
# (NB_TIMEOUT overrides the 900 s per cell; lab is built once into .build/lab.)
# The committed notebook is never modified: the executed copy goes to the git-ignored .build/notebooks/
# (mirroring notebooks/ subfolders), lab's report to NAME.log and the kernel's log to NAME.kernel.log
# next to it. Exercise notebooks (notebooks/exercises/) run with the reference solution filled into
# their marked cell. lab nbrun counts panics, os.Exit(n != 0) and failing `!` commands as cell errors
# (GoNB itself only reports compile errors).
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
# started), exported by these scripts too, and passed on to the kernel by lab nbrun.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_go

TIMEOUT="${NB_TIMEOUT:-900}"   # seconds per cell
MAX_BYTES=$((2 * 1024 * 1024))  # an executed notebook, its charts in HTML and PNG, stays under 2 MB
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

LAB="$BUILD_DIR/lab"
log "building lab into ${LAB#"$GPULAB_ROOT/"}"
go build -o "$LAB" ./lab

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
  rm -f "$out_dir/$name.ipynb" "$out_dir/$name.kernel.log"
  log_file="$out_dir/$name.log"

  printf '%-50s ' "$rel"
  t0=$(now)
  # An exercise runs with the reference solution filled into its marked cell
  # (lab exercise-fill); the committed notebook keeps its TODO.
  run_nb="$nb"
  if [[ "$rel" == exercises/* ]]; then
    run_nb="$out_dir/.filled/$name.ipynb"
    mkdir -p "$out_dir/.filled"
    "$LAB" exercise-fill "$nb" --out "$run_nb" >"$log_file" 2>&1 || run_nb=""
  fi
  ok=0
  if [[ -n "$run_nb" ]] && "$LAB" nbrun "$run_nb" --out "$out_dir" --timeout "${TIMEOUT}s" \
      --log "$out_dir/$name.kernel.log" >>"$log_file" 2>&1; then
    ok=1
    size=$(stat -c %s "$out_dir/$name.ipynb")
    if ((size > MAX_BYTES)); then
      echo "FAIL the executed copy weighs $size bytes, over the $MAX_BYTES a notebook may" >>"$log_file"
      ok=0
    fi
  fi
  if ((ok)); then
    printf 'PASS %8s\n' "$(elapsed_since "$t0")"
    passed=$((passed + 1))
  else
    printf 'FAIL %8s   (log: %s)\n' "$(elapsed_since "$t0")" "${log_file#"$GPULAB_ROOT/"}"
    failed=$((failed + 1))
    failures+=("$rel")
    # The failing cell as lab nbrun reports it; else (no report) the log's tail.
    if grep -q '^FAIL ' "$log_file"; then
      sed -n '/^FAIL /,$p' "$log_file" | sed 's/^/    /'
    else
      tail -n 40 "$log_file" | sed 's/^/    /'
    fi
  fi
done

echo "notebooks took $(elapsed_since "$START")${failures[*]:+; failed: ${failures[*]}}"
echo "notebooks: $passed passed, $failed failed"
((failed == 0))
