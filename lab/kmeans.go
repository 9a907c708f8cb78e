package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"gpulab/datasets"
	"gpulab/engine"
	"gpulab/engine/atomicfile"
	"gpulab/engine/cluster/kmeans"
)

// npyData adapts an open .npy file to kmeans.Data.
type npyData struct{ f *datasets.NPYFile }

func (d npyData) Dims() (int, int)                       { return d.f.Rows, d.f.Cols }
func (d npyData) Rows(start, n int, dst []float32) error { return d.f.ReadRows(start, n, dst) }

// phaseMS is one phase of a GPU iteration.
type phaseMS struct {
	Name string  `json:"name"`
	MS   float64 `json:"ms"`
}

// kmeansOut is what --json prints.
type kmeansOut struct {
	Device    string    `json:"device"`
	Variant   string    `json:"variant,omitempty"`
	N         int       `json:"n"`
	D         int       `json:"d"`
	K         int       `json:"k"`
	Inertia   float64   `json:"inertia"`
	Iters     int       `json:"iters"`
	MSPerIter float64   `json:"ms_per_iter"`
	History   []float64 `json:"history"`
	Sizes     []int     `json:"sizes"`
	Empty     int       `json:"empty_reseeded"`
	Resident  *bool     `json:"resident,omitempty"`
	Phases    []phaseMS `json:"phases,omitempty"` // GPU, resident: the last iteration's phases
	Labels    string    `json:"labels"`
	Centers   string    `json:"centers"`
}

func kmeansCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("kmeans", stderr)
	data := fs.String("data", "", "the points: a float32 (or float64) .npy of shape (N, D), or a .fvecs file")
	initPath := fs.String("init", "", "initial centers, a (K, D) .npy: runs exactly Lloyd's iterations from them (K from the file)")
	k := numberFlag(fs, "k", 0, ints(1, maxCount), "clusters (without --init)")
	seed := numberFlag(fs, "seed", 1, seeds, "seed of the initialization")
	random := fs.Bool("random-init", false, "initialize with K random points instead of k-means++")
	iters := numberFlag(fs, "iters", 100, ints(1, maxRuns), "Lloyd iterations at most, at least 1 (with --tol the run may stop sooner)")
	tol := numberFlag(fs, "tol", 0, floats(nonNegative), "stop when the inertia changes by less than this, relatively (0: run --iters)")
	device := deviceFlag(fs, "cpu", []string{devCPU, devCUDA}, "cpu or cuda:N")
	variant := choiceFlag(fs, "variant", "tensor_3xtf32", kmeans.Variants, fmt.Sprintf("GPU variant: %v", kmeans.Variants))
	batch := numberFlag(fs, "stream-batch", 0, ints(0, maxCount), "GPU: stream X in batches of this many rows (0: resident when it fits)")
	out := fs.String("out", "", "directory for labels.npy (int32) and centers.npy (float32), written both or neither")
	asJSON := fs.Bool("json", false, "print a JSON summary")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab kmeans --data X.npy [--init C.npy | --k K --seed S] [--iters N] [--tol T] --device D --out DIR [--json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *data == "" || *out == "" {
		fs.Usage()
		return usageError{fmt.Errorf("--data and --out are required")}
	}
	if info, err := os.Stat(*out); err == nil && !info.IsDir() { // said before the run, not after
		return usageError{fmt.Errorf("--out %s is a file, want a directory (for labels.npy and centers.npy)", *out)}
	}
	cfg := kmeans.Config{K: *k, MaxIters: *iters, Tol: *tol, Seed: *seed}
	if *random {
		cfg.Init = kmeans.Random
	}
	var src kmeans.Data
	if filepath.Ext(*data) == ".fvecs" {
		x, n, d, err := datasets.ReadFvecs(*data)
		if err != nil {
			return err
		}
		src = &kmeans.Matrix{N: n, D: d, X: x}
	} else {
		f, err := datasets.OpenNPY(*data)
		if err != nil {
			return err
		}
		defer f.Close()
		src = npyData{f}
	}
	n, d := src.Dims()
	if *initPath != "" {
		c, rows, cols, err := datasets.ReadNPYFloat32(*initPath)
		if err != nil {
			return err
		}
		if cols != d {
			return fmt.Errorf("%s: centers have %d dimensions but %s has %d", *initPath, cols, *data, d)
		}
		if *k != 0 && *k != rows {
			return usageError{fmt.Errorf("--k %d but %s holds %d centers", *k, *initPath, rows)}
		}
		cfg.K, cfg.Centers = rows, c
	} else if *k == 0 {
		return usageError{fmt.Errorf("give --k or --init")}
	}
	dev, err := engine.Open(*device)
	if err != nil {
		return usageError{err}
	}
	defer dev.Close()
	res := kmeansOut{Device: dev.ID, N: n, D: d, K: cfg.K}
	// The engine's errors name points and dimensions; these name the files.
	of := "k-means of " + *data
	if *initPath != "" {
		of += " from the centers in " + *initPath
	}
	start := time.Now()
	var r *kmeans.Result
	switch dev.Kind {
	case engine.CPU:
		m, ok := src.(*kmeans.Matrix)
		if !ok {
			// The header sizes X (a sparse file passes the check of its
			// size), checked before it is read, with what Fit needs besides.
			need := 4*float64(n)*float64(d) + kmeans.HostBytes(n, d, true)
			if err := engine.CheckHostMemory(of, fmt.Sprintf("its %d×%d points as float32, a label and a distance each, and k-means++'s candidates", n, d), engine.BytesOf(need)); err != nil {
				return err
			}
			m = &kmeans.Matrix{N: n, D: d, X: make([]float32, n*d)}
			if err := src.Rows(0, n, m.X); err != nil {
				return err
			}
		}
		if r, err = kmeans.Fit(m, cfg); err != nil {
			return fmt.Errorf("%s: %w", of, err)
		}
		res.MSPerIter = float64(time.Since(start)) / float64(time.Millisecond) / float64(r.Iters+1)
	case engine.CUDA:
		var st *kmeans.GPUStats
		if r, st, err = kmeans.FitCUDA(dev.CUDA, src, cfg, kmeans.GPUOptions{Variant: *variant, Batch: *batch}); err != nil {
			return fmt.Errorf("%s: %w", of, err)
		}
		res.Variant, res.Resident = st.Variant, &st.Resident
		res.MSPerIter = float64(st.MeanIter()) / float64(time.Millisecond)
		for _, ph := range st.Phases {
			res.Phases = append(res.Phases, phaseMS{ph.Name, float64(ph.Time) / float64(time.Millisecond)})
		}
	default:
		return usageError{fmt.Errorf("lab kmeans runs on cpu or cuda:N, not %s", dev.ID)}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	res.Labels, res.Centers = filepath.Join(*out, "labels.npy"), filepath.Join(*out, "centers.npy")
	err = atomicfile.WriteSet( // both or neither: labels without their centers mean nothing
		atomicfile.File{Path: res.Labels, Write: func(w *bufio.Writer) error { return datasets.EncodeNPYInt32(w, r.Labels) }},
		atomicfile.File{Path: res.Centers, Write: func(w *bufio.Writer) error { return datasets.EncodeNPYFloat32(w, r.Centers, r.K, r.D) }},
	)
	if err != nil {
		return err
	}
	res.Inertia, res.Iters, res.History, res.Sizes, res.Empty = r.Inertia, r.Iters, r.History, r.Sizes, r.Empty
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "k-means on %s: %d points × %d dims, K = %d, %d iterations, %.3f ms per iteration\n", dev.ID, n, d, cfg.K, r.Iters, res.MSPerIter)
	fmt.Fprintf(stdout, "inertia %.6g; cluster sizes %v\nwrote %s and %s\n", r.Inertia, r.Sizes, res.Labels, res.Centers)
	return nil
}
