package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/sparse"
)

const sparseUsage = `usage:
  lab sparse info FILE [--json]      a Matrix Market file's header, entry counts (duplicates summed)
                                     and row lengths
  lab sparse phases MATRIX [--device cuda:0] [--steps S,...] [--window W] [--json FILE]
                                     time each phase (and bin) of the GPU SpGEMM steps on C = A²,
                                     next to cuSPARSE; MATRIX as for lab bench --matrix
  lab sparse fetch Group/Name        download a SuiteSparse matrix (cached) and print its path
                                     ($GPULAB_SUITESPARSE_URL replaces the collection's URL)
`

// sparseCmd runs the sparse-matrix subcommands.
func sparseCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, sparseUsage)
		return usageError{fmt.Errorf("no subcommand (info, phases or fetch)")}
	}
	switch args[0] {
	case "info":
		return sparseInfoCmd(args[1:], stdout, stderr)
	case "fetch":
		return sparseFetchCmd(args[1:], stdout, stderr)
	case "phases":
		return sparsePhasesCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, sparseUsage)
		return nil
	}
	fmt.Fprint(stderr, sparseUsage)
	return usageError{fmt.Errorf("unknown subcommand %q", args[0])}
}

// oneArg parses fs with the single positional argument before or after the
// flags.
func oneArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	var arg string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		arg, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return "", usageError{err}
	}
	if arg == "" && fs.NArg() > 0 {
		arg = fs.Arg(0)
		if fs.NArg() > 1 {
			return "", usageError{fmt.Errorf("unexpected arguments %q", fs.Args()[1:])}
		}
	} else if fs.NArg() > 0 {
		return "", usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if arg == "" {
		fs.Usage()
		return "", usageError{fmt.Errorf("no %s given", what)}
	}
	return arg, nil
}

// sparseInfo is what lab sparse info reports.
type sparseInfo struct {
	File     string `json:"file"`
	Object   string `json:"object"`
	Format   string `json:"format"`
	Field    string `json:"field"`
	Symmetry string `json:"symmetry"`
	Rows     int    `json:"rows"`
	Cols     int    `json:"cols"`
	Stored   int    `json:"stored"` // entries in the file
	NNZ      int    `json:"nnz"`    // positions with an entry, after expanding symmetric ones
	// Duplicates are the entries summed into another at the same position
	// (after expanding symmetric ones), as scipy.io.mmread(f).tocsr() sums
	// them: NNZ + Duplicates entries were read.
	Duplicates int      `json:"duplicates"`
	RowMin     int      `json:"row_min"`
	RowMax     int      `json:"row_max"`
	RowMean    float64  `json:"row_mean"`
	RowStddev  float64  `json:"row_stddev"`
	RowsEmpty  int      `json:"rows_empty"` // rows without an entry
	Comments   []string `json:"comments"`   // the first comment lines (sparse.Header.Comments)
	// CommentsOmitted counts the comment lines after those.
	CommentsOmitted int `json:"comments_omitted"`
}

func sparseInfoCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sparse info", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab sparse info FILE [--json]")
		fs.PrintDefaults()
	}
	path, err := oneArg(fs, args, "file")
	if err != nil {
		return err
	}
	coo, h, err := sparse.ReadMatrixMarketFile(path)
	if err != nil {
		return err
	}
	m, dups, err := coo.Summed()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	in := sparseInfo{File: path, Object: h.Object, Format: h.Format, Field: h.Field, Symmetry: h.Symmetry,
		Rows: h.Rows, Cols: h.Cols, Stored: h.Entries, NNZ: m.NNZ(), Duplicates: dups,
		Comments: h.Comments, CommentsOmitted: h.CommentsOmitted}
	st := m.RowLengthStats()
	in.RowMin, in.RowMax, in.RowMean, in.RowStddev, in.RowsEmpty = st.Min, st.Max, st.Mean, st.Stddev, st.Empty
	if in.Comments == nil {
		in.Comments = []string{}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	fmt.Fprintf(stdout, "file       %s\n", in.File)
	fmt.Fprintf(stdout, "header     %s %s %s %s\n", in.Object, in.Format, in.Field, in.Symmetry)
	fmt.Fprintf(stdout, "size       %d×%d\n", in.Rows, in.Cols)
	fmt.Fprintf(stdout, "stored     %d entries\n", in.Stored)
	var notes []string
	switch {
	case h.Symmetry != "general":
		notes = append(notes, "after expanding the "+h.Symmetry+" entries")
	case h.Format == "array":
		notes = append(notes, "nonzero values")
	}
	switch {
	case in.Duplicates == 1:
		notes = append(notes, "1 duplicate summed")
	case in.Duplicates > 1:
		notes = append(notes, fmt.Sprintf("%d duplicates summed", in.Duplicates))
	}
	if len(notes) > 0 {
		fmt.Fprintf(stdout, "nnz        %d (%s)\n", in.NNZ, strings.Join(notes, "; "))
	} else {
		fmt.Fprintf(stdout, "nnz        %d\n", in.NNZ)
	}
	if in.Rows > 0 && in.Cols > 0 {
		fmt.Fprintf(stdout, "density    %.3g%%\n", 100*float64(in.NNZ)/float64(in.Rows)/float64(in.Cols))
	}
	fmt.Fprintf(stdout, "row length min %d, max %d, mean %.2f, stddev %.2f; %d of %d rows empty\n", in.RowMin, in.RowMax, in.RowMean, in.RowStddev, in.RowsEmpty, in.Rows)
	for _, c := range in.Comments {
		fmt.Fprintf(stdout, "%% %s\n", c)
	}
	if in.CommentsOmitted > 0 {
		fmt.Fprintf(stdout, "%% (%d more comment lines not kept)\n", in.CommentsOmitted)
	}
	return nil
}

func sparseFetchCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sparse fetch", stderr)
	cache := fs.String("cache", "", "cache directory (default: the user cache directory's gpulab/suitesparse)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab sparse fetch Group/Name [--cache DIR]   (e.g. HB/bcsstk01; $GPULAB_SUITESPARSE_URL replaces the download URL)")
		fs.PrintDefaults()
	}
	name, err := oneArg(fs, args, "matrix name")
	if err != nil {
		return err
	}
	path, err := sparse.Fetch(name, sparse.FetchOptions{CacheDir: *cache})
	if err != nil {
		if strings.Contains(err.Error(), "bad SuiteSparse matrix name") {
			return usageError{err}
		}
		return err
	}
	fmt.Fprintln(stdout, path)
	return nil
}

func sparsePhasesCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sparse phases", stderr)
	device := deviceFlag(fs, "cuda:0", []string{devCUDA}, "CUDA device")
	steps := listFlag(fs, "steps", sparse.GPUSteps, "comma-separated steps (default: all of "+strings.Join(sparse.GPUSteps, ", ")+")")
	jsonPath := fs.String("json", "", "also write the stats, with the device, commit and date, to this JSON file")
	window := numberFlag(fs, "window", 0, ints(1024, 32768), "column width of the windowed dense blocks, a multiple of 1024 up to 32768 (default 16384)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab sparse phases MATRIX [--device cuda:0] [--steps S,...] [--window W] [--json FILE]")
		fs.PrintDefaults()
	}
	spec, err := oneArg(fs, args, "matrix")
	if err != nil {
		return err
	}
	dev, err := engine.Open(*device)
	if err != nil {
		return usageError{err}
	}
	defer dev.Close()
	if dev.Kind != engine.CUDA {
		return usageError{fmt.Errorf("lab sparse phases times CUDA kernels; %s is not a CUDA device", dev.ID)}
	}
	a, err := sparse.LoadMatrix(spec)
	if err != nil {
		return err
	}
	stats, err := sparse.Profile(dev.CUDA, a, a, *steps, *window)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "C = A² for %s (%s) on %s (%s), commit %s\n", spec, a.Shape(), dev.ID, dev.Name, bench.Commit())
	for _, s := range stats {
		fmt.Fprintf(stdout, "\n%-18s total %9.3f ms   peak memory %8.1f MiB\n", s.Step, ms(s.Total), float64(s.PeakBytes)/(1<<20))
		for _, p := range s.Phases {
			fmt.Fprintf(stdout, "  %-44s %9d rows %9.3f ms %5.1f%%\n", p.Name, p.Rows, ms(p.Time), 100*float64(p.Time)/float64(max(s.Total, 1)))
		}
	}
	if *jsonPath != "" {
		return bench.WriteJSONValue(*jsonPath, sparse.PhasesRun{
			Provenance: bench.Provenance{Device: dev.ID, DeviceName: dev.Name, Commit: bench.Commit(), Date: time.Now().UTC().Format(time.RFC3339)},
			Matrix:     spec, Steps: stats,
		})
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
