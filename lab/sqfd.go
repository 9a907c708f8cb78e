package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"gpulab/engine"
	"gpulab/engine/cpu"
	"gpulab/engine/sqfd"
)

// sqfdPair is one element of the --pairs file: two signatures as centroid
// feature rows and their weights.
type sqfdPair struct {
	C1 [][]float64 `json:"c1"`
	W1 []float64   `json:"w1"`
	C2 [][]float64 `json:"c2"`
	W2 []float64   `json:"w2"`
}

func sqfdCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sqfd", stderr)
	pairs := fs.String("pairs", "", `a JSON array of signature pairs {"c1": [[f...]...], "w1": [...], "c2": [[f...]...], "w2": [...]}`)
	simName := choiceFlag(fs, "sim", sqfd.Gaussian.String(), []string{sqfd.Gaussian.String(), sqfd.Heuristic.String()}, "similarity: gaussian exp(-alpha·d²) or heuristic 1/(alpha+d)")
	alpha := numberFlag(fs, "alpha", 1, floats(positive), "the similarity's alpha (> 0)")
	device := deviceFlag(fs, "cpu", []string{devCPU, devCUDA}, "cpu, or cuda:N for the GPU kernel that k-medoids uses for self-similarities (cross_pairs)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab sqfd --pairs FILE.json [--sim gaussian|heuristic] [--alpha A] [--device cpu|cuda:N]")
		fmt.Fprintln(stderr, "prints the Signature Quadratic Form Distance of each pair as a JSON array; weights are used as given")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *pairs == "" || fs.NArg() > 0 {
		fs.Usage()
		return usageError{fmt.Errorf("--pairs is required, and nothing else")}
	}
	sim, err := sqfd.ParseSimilarity(*simName)
	if err != nil {
		return usageError{err}
	}
	k := sqfd.Kernel{Sim: sim, Alpha: *alpha}
	if err := k.Validate(); err != nil {
		return usageError{err}
	}
	var dev *engine.Device
	if *device != "cpu" {
		if dev, err = engine.Open(*device); err != nil {
			return usageError{err}
		}
		defer dev.Close()
	}
	sigs, dims, err := readPairs(*pairs)
	if err != nil {
		return err
	}
	var dist []float64
	if dev == nil {
		dist, err = cpuPairs(sigs, dims, k)
	} else {
		dist, err = gpuPairs(dev, sigs, dims, k)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", *pairs, err)
	}
	out, err := json.Marshal(dist)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}

// cpuPairs is SQFD of every pair (sigs[2i], sigs[2i+1]) on the CPU.
func cpuPairs(sigs [][]float32, dims []int, k sqfd.Kernel) ([]float64, error) {
	dist := make([]float64, len(dims))
	errs := make([]error, len(dims))
	cpu.Parallel(len(dims), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dist[i], errs[i] = sqfd.Distance(sigs[2*i], sigs[2*i+1], dims[i], k)
		}
	})
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("pair %d: %v", i, err)
		}
	}
	return dist, nil
}

// gpuPairs is SQFD of every pair on a CUDA device, one launch per feature
// count.
func gpuPairs(dev *engine.Device, sigs [][]float32, dims []int, k sqfd.Kernel) ([]float64, error) {
	dist := make([]float64, len(dims))
	byDim := map[int][]int{}
	for i, d := range dims {
		byDim[d] = append(byDim[d], i)
	}
	for dim, pairs := range byDim {
		a, b := make([][]float32, len(pairs)), make([][]float32, len(pairs))
		for j, i := range pairs {
			a[j], b[j] = sigs[2*i], sigs[2*i+1]
		}
		d, err := sqfd.PairDistances(dev.CUDA, a, b, dim, k)
		if err != nil {
			return nil, fmt.Errorf("among the pairs of %d features (pairs %v, numbered from 0 here): %w", dim, pairs, err)
		}
		for j, i := range pairs {
			dist[i] = d[j]
		}
	}
	return dist, nil
}

// readPairs reads a --pairs file into signatures in the datasets layout,
// two per pair, and the features per centroid of each pair.
func readPairs(path string) ([][]float32, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return decodePairs(path, f)
}

// decodePairs reads the JSON array of pairs in r, one pair at a time, and
// nothing after it but white space; name stands for r in errors, which say
// which pair and how many bytes come before it.
func decodePairs(name string, r io.Reader) ([][]float32, []int, error) {
	dec := json.NewDecoder(r)
	switch t, err := dec.Token(); {
	case err != nil:
		return nil, nil, fmt.Errorf("%s: want a JSON array of pairs: %v", name, err)
	case t != json.Delim('['):
		return nil, nil, fmt.Errorf("%s: want a JSON array of pairs, not one starting with %v", name, t)
	}
	var sigs [][]float32
	var dims []int
	for i := 0; ; i++ {
		before := dec.InputOffset()
		if !dec.More() {
			break
		}
		var p sqfdPair
		err := dec.Decode(&p)
		var a, b []float32
		if err == nil {
			a, b, err = p.signatures()
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: pair %d (after the first %d bytes): %v", name, i, before, err)
		}
		sigs, dims = append(sigs, a, b), append(dims, len(p.C1[0]))
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("%s: after %d pairs: %v", name, len(dims), err)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, fmt.Errorf("%s: data after the array of %d pairs, which ends after the first %d bytes", name, len(dims), end)
	}
	return sigs, dims, nil
}

// signatures lays c1, w1 and c2, w2 out as records of features and a weight.
func (p *sqfdPair) signatures() ([]float32, []float32, error) {
	if len(p.C1) == 0 || len(p.C2) == 0 {
		return nil, nil, fmt.Errorf("c1 and c2 need a centroid each, have %d and %d", len(p.C1), len(p.C2))
	}
	if len(p.C1[0]) == 0 {
		return nil, nil, fmt.Errorf("c1[0] has no features")
	}
	a, err := signature(p.C1, p.W1, len(p.C1[0]), "1")
	if err != nil {
		return nil, nil, err
	}
	b, err := signature(p.C2, p.W2, len(p.C1[0]), "2")
	return a, b, err
}

// signature lays centroid rows c and weights w out as records of dim
// features and a weight; n names them (c1 and w1, or c2 and w2). Values
// beyond float32 become Inf, which sqfd.Distance reports.
func signature(c [][]float64, w []float64, dim int, n string) ([]float32, error) {
	if len(c) != len(w) {
		return nil, fmt.Errorf("%d centroids in c%s but %d weights in w%s", len(c), n, len(w), n)
	}
	s := make([]float32, 0, len(c)*(dim+1))
	for j, row := range c {
		if len(row) != dim {
			return nil, fmt.Errorf("c%s[%d] has %d features but c1[0] has %d", n, j, len(row), dim)
		}
		for _, v := range row {
			s = append(s, float32(v))
		}
		s = append(s, float32(w[j]))
	}
	return s, nil
}
