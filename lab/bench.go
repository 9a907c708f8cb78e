package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
)

func benchCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", stderr)
	device := deviceFlag(fs, "cpu", []string{devCPU, devCUDA, devOpenCL, devAll}, "device id (lab devices lists them); all-gpus: kmedoids on every CUDA device of the host, next to cuda:0 alone")
	sizes := fs.String("size", "", "comma-separated sizes (suite-specific, e.g. 64M for bandwidth suites); default: the suite's sweep for the device")
	matrices := fs.String("matrix", "", "sparse suites: comma-separated matrices, each gen:SPEC (gen:rmat:scale=16,ef=8), a .mtx file or a SuiteSparse Group/Name; same as --size")
	km := struct{ n, d, k, iters, batch int }{iters: 10} // n, d, k 0: not given
	numberVar(fs, &km.n, "n", ints(1, maxCount), "kmeans: points (with --d and --k: adds the size blobs:n=,d=,k=,iters=,batch=); kmedoids: signatures (adds sigs:n=,k=)")
	numberVar(fs, &km.d, "d", ints(1, maxCount), "kmeans: dimensions")
	numberVar(fs, &km.k, "k", ints(1, maxCount), "kmeans, kmedoids: clusters")
	numberVar(fs, &km.iters, "iters", ints(1, maxRuns), "kmeans: Lloyd iterations per run")
	numberVar(fs, &km.batch, "stream-batch", ints(0, maxCount), "kmeans: stream X from pinned host memory in batches of this many rows (0: resident when it fits)")
	variants := fs.String("variants", "", "comma-separated variants to run (the baseline always runs); default: all")
	jsonPath := fs.String("json", "", "also write the records to this JSON file")
	list := fs.Bool("list", false, "list the suites and exit")
	warmup := numberFlag(fs, "warmup", 2, ints(1, maxRuns), "untimed runs before timing")
	minReps := numberFlag(fs, "reps", 5, ints(1, maxRuns), "at least this many timed runs")
	minTime := numberFlag(fs, "min-time", 200*time.Millisecond, durations, fmt.Sprintf("repeat each case until this much device time is spent (or %d runs are)", maxRuns))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab bench SUITE [--device ID] [--size S,S,... | --matrix M,M,...] [--variants V,...] [--json FILE]")
		fs.PrintDefaults()
	}
	// Allow the suite name before or after the flags.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *list {
		for _, s := range bench.Suites() {
			fmt.Fprintf(stdout, "%-10s %s\n", s.Name, s.Doc)
		}
		return nil
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	if name == "" {
		fs.Usage()
		return usageError{fmt.Errorf("no suite named (lab bench --list)")}
	}
	suite, err := bench.Lookup(name)
	if err != nil {
		return usageError{err}
	}
	// bench.Options' default maximum of runs (200) would end a fast case
	// before --min-time: on the command line the time is what counts.
	opt := bench.Options{Warmup: *warmup, MinReps: *minReps, MaxReps: maxRuns, MinTime: *minTime, Variants: bench.SplitList(*variants), Progress: os.Stderr}
	if *jsonPath != "" {
		if err := checkOutFile("json", *jsonPath, "records.json"); err != nil {
			return err
		}
	}
	if *device == engine.AllGPUs && name != "kmedoids" {
		return usageError{fmt.Errorf("--device %s is for the kmedoids suite, not %s", engine.AllGPUs, name)}
	}
	devs, err := engine.OpenDevices(*device)
	if err != nil {
		return usageError{fmt.Errorf("--device %s: %w", *device, err)}
	}
	dev := devs[0] // with all-gpus, cuda:0 runs the suite and the sizes get gpus=N
	defer dev.Close()
	gpus := 0
	if *device == engine.AllGPUs {
		gpus = len(devs)
	}
	sizeList := append(bench.SplitList(*sizes), bench.SplitList(*matrices)...)
	switch {
	case name == "kmedoids" && km.n != 0:
		sizeList = append(sizeList, fmt.Sprintf("sigs:n=%d,k=%d", km.n, max(km.k, 1)))
	case km.n != 0 || km.d != 0 || km.k != 0:
		sizeList = append(sizeList, fmt.Sprintf("blobs:n=%d,d=%d,k=%d,iters=%d,batch=%d", km.n, km.d, km.k, km.iters, km.batch))
	}
	if gpus > 0 {
		if len(sizeList) == 0 {
			sizeList = suite.Sizes(dev.Info)
		}
		for i := range sizeList {
			sizeList[i] += fmt.Sprintf(",gpus=%d", gpus)
		}
	}
	recs, err := bench.Run(suite, dev, sizeList, opt)
	if len(recs) > 0 {
		fmt.Fprintf(stdout, "%s on %s (%s), commit %s\n", suite.Name, dev.ID, dev.Name, bench.Commit())
		fmt.Fprint(stdout, bench.Table(recs))
	}
	for _, r := range recs {
		if r.Error == "" && r.TotalMS < float64(*minTime)/float64(time.Millisecond) {
			fmt.Fprintf(stderr, "lab bench: %s at %s: %d runs (the most there may be) took %.3g ms of device time, less than --min-time %v\n",
				r.Variant, r.Size, r.Reps, r.TotalMS, *minTime)
		}
	}
	if err != nil {
		return err
	}
	if *jsonPath != "" {
		if err := bench.WriteJSON(*jsonPath, recs); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %d records to %s\n", len(recs), *jsonPath)
	}
	return bench.Failed(recs)
}

// checkOutFile returns a usage error unless path, the value of --flag, can
// be a file that the command writes when it ends (through a temporary file
// beside it, renamed into place): not a directory, and in a directory that
// exists. It is said before the run, not after it. example names a file
// for the error to suggest.
func checkOutFile(flag, path, example string) error {
	if isDir(path) || strings.HasSuffix(path, string(filepath.Separator)) {
		return usageError{fmt.Errorf("--%s %s is a directory: want the file to write, such as %s", flag, path, filepath.Join(path, example))}
	}
	if dir := filepath.Dir(path); !isDir(dir) {
		return usageError{fmt.Errorf("--%s %s: there is no directory %s to write it in", flag, path, dir)}
	}
	return nil
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// reportCmd prints the records of bench JSON files as one Markdown table,
// with the devices, commits and dates they came from.
func reportCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{fmt.Errorf("usage: lab report FILE.json [FILE.json ...]: no file given")}
	}
	var all []bench.Record
	for _, path := range args {
		recs, err := bench.ReadJSON(path)
		if err != nil {
			return err
		}
		all = append(all, recs...)
	}
	seen := map[string]bool{}
	for _, r := range all {
		src := fmt.Sprintf("%s (%s), commit %s, %s", r.Device, r.DeviceName, r.Commit, r.Date[:min(10, len(r.Date))])
		if !seen[src] {
			seen[src] = true
			fmt.Fprintf(stdout, "- %s\n", src)
		}
	}
	fmt.Fprintf(stdout, "\n%s", bench.Markdown(all))
	return nil
}
