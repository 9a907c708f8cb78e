// Package nb holds what every gpulab notebook cell needs: which devices and
// sizes to run (from environment knobs, so that the same notebook runs small
// on a laptop and at full size on a GPU), running suites, keeping results
// between cells (each GoNB cell is its own process), and showing Markdown.
//
// Knobs:
//
//	GPULAB_DEVICES   comma-separated device ids (default: every usable device)
//	GPULAB_SIZES     comma-separated sizes (default: each suite's sweep for the device)
//	GPULAB_RESULTS   directory for results kept between cells (default: $TMPDIR/gpulab-results)
package nb

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/janpfeifer/gonb/gonbui"

	"gpulab/engine"
	"gpulab/engine/bench"
	_ "gpulab/engine/suites" // so that Run finds every suite by name
)

// DeviceIDs returns the ids in $GPULAB_DEVICES, or every usable device.
func DeviceIDs() []string {
	if ids := bench.SplitList(os.Getenv("GPULAB_DEVICES")); len(ids) > 0 {
		return ids
	}
	return engine.IDs()
}

// Sizes returns the sizes in $GPULAB_SIZES, or nil for each suite's default sweep.
func Sizes() []string { return bench.SplitList(os.Getenv("GPULAB_SIZES")) }

// Must stops the cell when err is not nil: it prints the error and exits
// with status 1, which the notebook runner reports as a failed cell.
func Must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// Run runs each named suite on each device with the given sizes (nil: the
// suite's default sweep) and returns all records. It prints one line per
// device and suite so that a long run shows progress.
func Run(ids, suites, sizes []string, opt bench.Options) []bench.Record {
	var all []bench.Record
	for _, id := range ids {
		dev, err := engine.Open(id)
		Must(err)
		for _, name := range suites {
			suite, err := bench.Lookup(name)
			Must(err)
			start := time.Now()
			recs, err := bench.Run(suite, dev, sizes, opt)
			Must(err)
			fmt.Printf("%-8s on %-12s %3d cases in %.1fs\n", name, id, len(recs), time.Since(start).Seconds())
			all = append(all, recs...)
		}
		dev.Close()
	}
	return all
}

// ResultsPath is where results named name are kept between cells.
func ResultsPath(name string) string {
	dir := os.Getenv("GPULAB_RESULTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "gpulab-results")
	}
	return filepath.Join(dir, name+".json")
}

// RootPath joins parts onto the repository root, $GPULAB_ROOT (which the
// lab's Jupyter kernel sets), or the current directory without it: e.g.
// RootPath("docs", "results", "h200-gemm.json") for recorded results.
func RootPath(parts ...string) string {
	root := os.Getenv("GPULAB_ROOT")
	if root == "" {
		root = "."
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

// Save keeps records for later cells.
func Save(name string, recs []bench.Record) {
	path := ResultsPath(name)
	Must(os.MkdirAll(filepath.Dir(path), 0o755))
	Must(bench.WriteJSON(path, recs))
}

// Load reads records kept by Save; a missing file says which cell to run first.
func Load(name string) []bench.Record {
	recs, err := bench.ReadJSON(ResultsPath(name))
	if os.IsNotExist(err) {
		Must(fmt.Errorf("no results %q yet: run the cell that measures them first (%s)", name, ResultsPath(name)))
	}
	Must(err)
	return recs
}

// Markdown shows md as rendered Markdown in a notebook, or prints it elsewhere.
func Markdown(md string) {
	if gonbui.IsNotebook {
		gonbui.DisplayMarkdown(md)
		gonbui.Sync() // GoNB drops what is still in the pipe when the cell's program exits
		return
	}
	fmt.Println(md)
}

// Filter keeps the records for which keep returns true.
func Filter(recs []bench.Record, keep func(bench.Record) bool) []bench.Record {
	var out []bench.Record
	for _, r := range recs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}
