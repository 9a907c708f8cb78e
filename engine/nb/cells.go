package nb

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/plot"
)

// What notebook cells repeat, so that a cell stays a few calls.

// Check returns v, or stops the cell when err is not nil (Must).
func Check[T any](v T, err error) T {
	Must(err)
	return v
}

// Check2 is Check for calls that return two values and an error.
func Check2[T, U any](v T, w U, err error) (T, U) {
	Must(err)
	return v, w
}

// Show displays a figure (inline under GoNB), or stops the cell.
func Show(f *plot.Figure) {
	_, err := f.Show()
	Must(err)
}

// IDsOf returns the selected devices (DeviceIDs) of the given kinds.
func IDsOf(kinds ...engine.Kind) []string {
	var ids []string
	for _, id := range DeviceIDs() {
		kind, _, _ := strings.Cut(id, ":")
		if slices.Contains(kinds, engine.Kind(kind)) {
			ids = append(ids, id)
		}
	}
	return ids
}

// SizesOr returns $GPULAB_SIZES when it is set, else defaults.
func SizesOr(defaults ...string) []string {
	if s := Sizes(); len(s) > 0 {
		return s
	}
	return defaults
}

// Recorded reads benchmark records kept in docs/results (runs recorded on
// a GPU machine, with their device, commit and command).
func Recorded(name string) []bench.Record {
	return Check(bench.ReadJSON(RootPath("docs", "results", name)))
}

// RecordedJSON decodes a JSON file kept in docs/results into v.
func RecordedJSON(name string, v any) {
	data := Check(os.ReadFile(RootPath("docs", "results", name)))
	if err := json.Unmarshal(data, v); err != nil {
		Must(fmt.Errorf("docs/results/%s: %w", name, err))
	}
}

// Duration prints a time with three significant digits in the unit that
// keeps them: 812 ns, 4.31 µs, 45.6 ms, 2.31 s.
func Duration(d time.Duration) string {
	v, unit := float64(d), "ns"
	for _, u := range []string{"µs", "ms", "s"} {
		if math.Abs(v) < 999.5 {
			break
		}
		v, unit = v/1000, u
	}
	digits := 2
	for m := 10.0; m <= math.Abs(v)+1e-9 && digits > 0; m *= 10 {
		digits--
	}
	return fmt.Sprintf("%.*f %s", digits, v, unit)
}
