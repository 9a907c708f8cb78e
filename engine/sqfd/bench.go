package sqfd

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gpulab/datasets"
	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cluster/kmedoids"
	"gpulab/engine/cpu"
)

// Two suites on synthetic signatures (datasets.SyntheticSignatures, 7
// features). Sizes are "sigs:n=N[,k=K][,cmin=10][,cmax=40]". Flops are the
// useful SQFD flops: FlopsPerPair for every centroid pair of every cross
// term evaluated. The CPU is all there is so far; the CUDA kernels come with
// the GPU part of the k-medoids work.
//
//	sqfd      distance throughput over N pairs (i, i+1): serial and parallel
//	kmedoids  one assignment pass (N·K distances) and one score pass (Σ|C|²
//	          distances), timed separately, from k-medoids++ medoids
func init() {
	for _, s := range []bench.Suite{
		{Name: "sqfd", Doc: "SQFD distance throughput on synthetic signatures (Gaussian kernel): CPU serial and parallel", Cases: sqfdCases,
			Sizes: func(engine.Info) []string { return []string{"sigs:n=20000"} }},
		{Name: "kmedoids", Doc: "k-medoids with SQFD: the assignment and score passes, timed separately; CPU reference", Cases: kmedoidsCases,
			Sizes: func(engine.Info) []string { return []string{"sigs:n=2000,k=20"} }},
	} {
		bench.Register(s)
	}
}

// SigSpec is a parsed size of the sqfd and kmedoids suites.
type SigSpec struct{ N, K, CMin, CMax int }

// ParseSigSpec reads "sigs:n=N[,k=K][,cmin=C][,cmax=C]".
func ParseSigSpec(s string) (SigSpec, error) {
	sp := SigSpec{K: 10, CMin: 10, CMax: 40}
	if !strings.HasPrefix(strings.TrimSpace(s), "sigs:") {
		return sp, fmt.Errorf("sqfd: size %q: want sigs:n=N[,k=K][,cmin=C][,cmax=C]", s)
	}
	if err := bench.ParseFields(s, "sigs:", map[string]*int{"n": &sp.N, "k": &sp.K, "cmin": &sp.CMin, "cmax": &sp.CMax}); err != nil {
		return sp, fmt.Errorf("sqfd: %w", err)
	}
	if sp.N <= 0 || sp.K <= 0 || sp.K > sp.N {
		return sp, fmt.Errorf("sqfd: size %q: need 0 < k <= n", s)
	}
	return sp, nil
}

func setup(dev *engine.Device, size string) (SigSpec, *Metric, error) {
	if dev.Kind != engine.CPU {
		return SigSpec{}, nil, fmt.Errorf("sqfd: only the CPU reference exists so far, not %s", dev.ID)
	}
	sp, err := ParseSigSpec(size)
	if err != nil {
		return sp, nil, err
	}
	s, err := datasets.SyntheticSignatures(sp.N, sp.CMin, sp.CMax, Features, 1)
	if err != nil {
		return sp, nil, err
	}
	m, err := NewMetric(s, Kernel{Gaussian, 0.5})
	return sp, m, err
}

func sqfdCases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	sp, m, err := setup(dev, size)
	if err != nil {
		return nil, nil, err
	}
	n := sp.N
	var flops float64
	for i := range n {
		flops += float64(m.Pairs(i, (i+1)%n) * FlopsPerPair(Features))
	}
	want := make([]float64, n)
	for i := range n {
		want[i] = m.Distance(i, (i+1)%n)
	}
	var cases []bench.Case
	for _, parallel := range []bool{false, true} {
		name, grain := "cpu_serial", n
		if parallel {
			name, grain = "cpu_parallel", 64
		}
		got := make([]float64, n)
		cases = append(cases, bench.Case{Variant: name, Baseline: !parallel, Flops: flops, Tol: 1e-12,
			Params: bench.Params{"n": n, "cmin": sp.CMin, "cmax": sp.CMax},
			Reset:  func() error { clear(got); return nil },
			Run: func() (time.Duration, error) {
				start := time.Now()
				cpu.Parallel(n, grain, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						got[i] = m.Distance(i, (i+1)%n)
					}
				})
				return time.Since(start), nil
			},
			Check: func() (bench.Checked, error) { return compare(got, want), nil },
		})
	}
	return cases, nil, nil
}

// compare is the largest relative difference of two float64 results.
func compare(got, want []float64) bench.Checked {
	c := bench.Checked{Worst: -1}
	for i := range want {
		if e := math.Abs(got[i]-want[i]) / max(math.Abs(want[i]), 1); !(e <= c.MaxRelErr) {
			c.MaxRelErr, c.Worst = e, i
		}
	}
	return c
}

func kmedoidsCases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	sp, m, err := setup(dev, size)
	if err != nil {
		return nil, nil, err
	}
	medoids, err := kmedoids.InitialMedoids(m, kmedoids.Config{K: sp.K, Seed: 2})
	if err != nil {
		return nil, nil, err
	}
	n := sp.N
	labels, dist := make([]int32, n), make([]float64, n)
	kmedoids.Assign(m, medoids, labels, dist)
	var assignFlops, scoreFlops float64
	for i := range n {
		for _, md := range medoids {
			assignFlops += float64(m.Pairs(i, md) * FlopsPerPair(Features))
		}
	}
	list, offsets := kmedoids.Clusters(labels, sp.K)
	for c := range sp.K {
		for p := offsets[c]; p < offsets[c+1]; p++ {
			for q := offsets[c]; q < offsets[c+1]; q++ {
				scoreFlops += float64(m.Pairs(int(list[p]), int(list[q])) * FlopsPerPair(Features))
			}
		}
	}
	params := bench.Params{"n": n, "k": sp.K, "cmin": sp.CMin, "cmax": sp.CMax}
	gotLabels, gotDist := make([]int32, n), make([]float64, n)
	assign := bench.Case{Variant: "cpu_assignment", Baseline: true, Flops: assignFlops, Tol: 0, Params: params,
		Run: func() (time.Duration, error) {
			start := time.Now()
			kmedoids.Assign(m, medoids, gotLabels, gotDist)
			return time.Since(start), nil
		},
		Check: func() (bench.Checked, error) { return compare(gotDist, dist), nil },
	}
	want, _ := kmedoids.Update(m, labels, medoids)
	var got []int
	scores := bench.Case{Variant: "cpu_scores", CompareWith: "cpu_assignment", Flops: scoreFlops, Tol: 0, Params: params,
		Run: func() (time.Duration, error) {
			start := time.Now()
			got, _ = kmedoids.Update(m, labels, medoids)
			return time.Since(start), nil
		},
		Check: func() (bench.Checked, error) {
			for c := range want {
				if got[c] != want[c] {
					return bench.Checked{}, fmt.Errorf("cluster %d: medoid %d, a serial pass says %d", c, got[c], want[c])
				}
			}
			return bench.Checked{Worst: -1}, nil
		},
	}
	return []bench.Case{assign, scores}, nil, nil
}
