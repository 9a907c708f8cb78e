package sqfd

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cluster/kmedoids"
	"gpulab/engine/cpu"
	"gpulab/engine/cuda"
)

// cpuLimit: the CPU reference runs (on a CUDA device) while its two passes
// take at most this many useful flops, about 15 s on two cores.
const cpuLimit = 4e10

// checkSample is how many signatures a GPU assignment is checked on,
// against the CPU's distances to every medoid.
const checkSample = 256

// kmedoidsCases: see bench.go. Every case starts from the same medoids
// (k-medoids++, on the GPU when there is one) and the score cases from the
// same labels (the CPU's where it runs, else the GPU's).
func kmedoidsCases(dev *engine.Device, size string) (_ []bench.Case, _ func(), err error) {
	sp, m, err := setup(dev, "kmedoids", size, kmedoidsMemory)
	if err != nil {
		return nil, nil, err
	}
	n, k := sp.N, sp.K
	var opened []*KMedoidsGPU
	closeAll := func() {
		for _, g := range opened {
			g.Close()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	open := func(ctxs []*cuda.Context, opt GPUOptions) (*KMedoidsGPU, error) {
		opt.BigCluster = int64(sp.Big)
		g, err := NewKMedoidsGPU(ctxs, m, opt)
		if err == nil {
			opened = append(opened, g)
		}
		return g, err
	}
	var start kmedoids.Passes = kmedoids.CPU(m)
	var shared *KMedoidsGPU
	if dev.Kind == engine.CUDA {
		if shared, err = open([]*cuda.Context{dev.CUDA}, GPUOptions{}); err != nil {
			return nil, nil, err
		}
		start = shared
	}
	medoids, err := kmedoids.InitialMedoids(start, kmedoids.Config{K: k, Seed: 2})
	if err != nil {
		return nil, nil, err
	}
	var assignFlops, scoreFlops float64
	for i := range n {
		for _, md := range medoids {
			assignFlops += float64(m.Pairs(i, md) * FlopsPerPair(Features))
		}
	}
	labels, dist := make([]int32, n), make([]float64, n)
	if err := start.Assign(medoids, labels, dist); err != nil {
		return nil, nil, err
	}
	list, offsets := kmedoids.Clusters(labels, k)
	for c := range k {
		for p := offsets[c]; p < offsets[c+1]; p++ {
			for q := offsets[c]; q < offsets[c+1]; q++ {
				scoreFlops += float64(m.Pairs(int(list[p]), int(list[q])) * FlopsPerPair(Features))
			}
		}
	}
	params := bench.Params{"n": n, "k": k, "cmin": sp.CMin, "cmax": sp.CMax}
	cpuRuns := dev.Kind == engine.CPU || assignFlops+scoreFlops <= cpuLimit
	var cases []bench.Case
	if cpuRuns {
		if shared != nil {
			kmedoids.Assign(m, medoids, labels, dist) // the CPU's labels are the reference
		}
		cases = append(cases, cpuCases(m, medoids, labels, dist, assignFlops, scoreFlops, params)...)
	}
	if dev.Kind != engine.CUDA {
		return cases, nil, nil
	}
	gpuCases, err := cudaCases(dev, sp, m, medoids, labels, cpuRuns, assignFlops, scoreFlops, params, shared, open)
	if err != nil {
		return nil, nil, err
	}
	return append(cases, gpuCases...), closeAll, nil
}

// kmedoidsMemory is the memory the kmedoids suite holds for sp on dev: on
// the host the signatures and metric (metricMemory), and labels (int32)
// and distances (float64) of the points for the start and for the cases
// that check against it (2·12·N; 4·12·N on CUDA, whose cases keep more);
// on the device, counted on one GPU (more share the points), the
// signatures (deviceSignaturesMemory), a sorted copy of the centroids, the
// per-point arrays of a shard (labels, distances, cluster list, sorted
// offsets and self terms, 4 bytes each, and an 8-byte score: 28·N), and K
// medoids of up to CMax padded centroids.
func kmedoidsMemory(dev *engine.Device, sp SigSpec) (host, device engine.Need) {
	n, k, centroids := float64(sp.N), float64(sp.K), float64(sp.N)*float64(sp.CMax)
	hostBytes, holds := metricMemory(sp)+2*12*n, "the signatures, their normalized copy, and the labels and distances of the start and the cases"
	if dev.Kind != engine.CUDA {
		return engine.Need{Bytes: engine.BytesOf(hostBytes), Holds: holds}, device
	}
	hostBytes += 2 * 12 * n
	padded := float64(16 * ((Features + 4) / 4)) // bytes of a centroid padded to whole float4s
	return engine.Need{Bytes: engine.BytesOf(hostBytes), Holds: holds},
		engine.Need{Bytes: engine.BytesOf(deviceSignaturesMemory(sp) + padded*centroids + 28*n + padded*float64(sp.CMax)*k),
			Holds: "the signatures, their sorted copy, the points' labels, distances, clusters and scores, and the medoids"}
}

// cpuCases are the CPU reference's passes, checked against a first run.
// Their records note the threads the passes ran on (threads: GOMAXPROCS)
// and the host's logical CPUs (host_cpus), so that a ratio against them
// says against how much of the host it is.
func cpuCases(m *Metric, medoids []int, labels []int32, dist []float64, assignFlops, scoreFlops float64, params bench.Params) []bench.Case {
	params = with(with(params, "threads", cpu.Workers()), "host_cpus", runtime.NumCPU())
	n := m.Len()
	gotLabels, gotDist := make([]int32, n), make([]float64, n)
	assign := bench.Case{Variant: CPUAssignment, Baseline: true, Flops: assignFlops, Tol: 0, Params: params,
		Run: func() (time.Duration, error) {
			start := time.Now()
			kmedoids.Assign(m, medoids, gotLabels, gotDist)
			return time.Since(start), nil
		},
		Check: func() (bench.Checked, error) { return compare(gotDist, dist), nil },
	}
	want, _ := kmedoids.Update(m, labels, medoids)
	var got []int
	scores := bench.Case{Variant: CPUScores, CompareWith: CPUAssignment, Flops: scoreFlops, Tol: 0, Params: params,
		Run: func() (time.Duration, error) {
			start := time.Now()
			got, _ = kmedoids.Update(m, labels, medoids)
			return time.Since(start), nil
		},
		Check: func() (bench.Checked, error) {
			if !slices.Equal(got, want) {
				return bench.Checked{}, fmt.Errorf("medoids %v, a serial pass says %v", got, want)
			}
			return bench.Checked{Worst: -1}, nil
		},
	}
	return []bench.Case{assign, scores}
}

// cudaCases are the GPU passes (steps 01/02 and 04/05 on one GPU, the
// shared steps on sp.GPUs GPUs) and whole runs.
func cudaCases(dev *engine.Device, sp SigSpec, m *Metric, medoids []int, labels []int32, cpuRuns bool, assignFlops, scoreFlops float64,
	params bench.Params, shared *KMedoidsGPU, open func([]*cuda.Context, GPUOptions) (*KMedoidsGPU, error)) ([]bench.Case, error) {
	n := sp.N
	naive, err := open([]*cuda.Context{dev.CUDA}, GPUOptions{Assign: Naive, Scores: Naive})
	if err != nil {
		return nil, err
	}
	var multi *KMedoidsGPU
	if sp.GPUs > 1 {
		if count, err := cuda.DeviceCount(); err != nil || count < sp.GPUs {
			return nil, fmt.Errorf("sqfd: gpus=%d, but this machine has %d CUDA devices (%v)", sp.GPUs, count, err)
		}
		ctxs := []*cuda.Context{}
		for i := range sp.GPUs {
			ctx, err := cuda.NewContext(i)
			if err != nil {
				return nil, err
			}
			ctxs = append(ctxs, ctx)
		}
		if multi, err = open(ctxs, GPUOptions{}); err != nil {
			return nil, err
		}
	}
	// What each case is checked against: the CPU on a sample (assignment),
	// the CPU's or the naive kernel's medoids (scores), and exactly the
	// single-GPU run (several GPUs).
	sample := make([]int, 0, checkSample)
	for i := 0; i < n; i += max(1, n/checkSample) {
		sample = append(sample, i)
	}
	oneLabels, oneDist := make([]int32, n), make([]float64, n)
	if err := shared.Assign(medoids, oneLabels, oneDist); err != nil {
		return nil, err
	}
	var wantMedoids []int
	if cpuRuns {
		wantMedoids, _ = kmedoids.Update(m, labels, medoids)
	} else if wantMedoids, _, err = naive.Update(labels, medoids); err != nil {
		return nil, err
	}
	oneMedoids, _, err := shared.Update(labels, medoids)
	if err != nil {
		return nil, err
	}
	cpuBase, compareScores := CPUAssignment, CPUScores
	if !cpuRuns {
		cpuBase, compareScores = AssignNaive, ScoresNaive
	}
	peak := dev.PeakGFLOPS
	var cases []bench.Case

	type assignVariant struct {
		name, compare string
		g             *KMedoidsGPU
		check         func(l []int32, d []float64) (bench.Checked, error)
	}
	againstCPU := func(l []int32, d []float64) (bench.Checked, error) {
		e, err := checkLabels(m, medoids, l, d, sample)
		return bench.Checked{MaxRelErr: e, Worst: -1}, err
	}
	assigns := []assignVariant{{AssignNaive, "", naive, againstCPU}, {AssignShared, "", shared, againstCPU}}
	if multi != nil {
		assigns = append(assigns, assignVariant{OnGPUs(AssignShared, sp.GPUs), AssignShared, multi, func(l []int32, d []float64) (bench.Checked, error) {
			if !slices.Equal(l, oneLabels) || !slices.Equal(d, oneDist) {
				return bench.Checked{}, fmt.Errorf("labels or distances differ from the single-GPU run's")
			}
			return bench.Checked{Worst: -1}, nil
		}})
	}
	for _, v := range assigns {
		gotLabels, gotDist := make([]int32, n), make([]float64, n)
		c := bench.Case{Variant: v.name, Baseline: v.name == cpuBase, CompareWith: v.compare, Flops: assignFlops, Tol: 1e-3,
			Params: with(params, "gpus", len(v.g.shards))}
		c.Reset = func() error { clear(gotLabels); clear(gotDist); return nil }
		c.Run = func() (time.Duration, error) {
			start := time.Now()
			if err := v.g.Assign(medoids, gotLabels, gotDist); err != nil {
				return 0, err
			}
			wall := time.Since(start)
			recordKernels(c.Params, v.g.Stats(), func(s ShardStats) time.Duration { return s.Assign }, assignFlops, peak)
			return wall, nil
		}
		c.Check = func() (bench.Checked, error) { return v.check(gotLabels, gotDist) }
		cases = append(cases, c)
	}

	type scoreVariant struct {
		name, compare string
		g             *KMedoidsGPU
		want          []int
	}
	scores := []scoreVariant{{ScoresNaive, compareScores, naive, wantMedoids}, {ScoresShared, compareScores, shared, wantMedoids}}
	if multi != nil {
		scores = append(scores, scoreVariant{OnGPUs(ScoresShared, sp.GPUs), ScoresShared, multi, oneMedoids})
	}
	for _, v := range scores {
		var got []int
		c := bench.Case{Variant: v.name, CompareWith: v.compare, Flops: scoreFlops, Tol: 0, Params: with(params, "gpus", len(v.g.shards))}
		c.Reset = func() error { got = nil; return nil }
		c.Run = func() (time.Duration, error) {
			start := time.Now()
			next, _, err := v.g.Update(labels, medoids)
			if err != nil {
				return 0, err
			}
			wall := time.Since(start)
			got = next
			recordKernels(c.Params, v.g.Stats(), func(s ShardStats) time.Duration { return s.Clusters + s.Scores }, scoreFlops, peak)
			return wall, nil
		}
		c.Check = func() (bench.Checked, error) {
			if v.g == multi && !slices.Equal(got, v.want) {
				return bench.Checked{}, fmt.Errorf("medoids differ from the single-GPU run's")
			}
			return bench.Checked{Worst: -1}, checkMedoids(m, labels, got, v.want)
		}
		cases = append(cases, c)
	}

	fits := []*KMedoidsGPU{shared}
	if multi != nil {
		fits = append(fits, multi)
	}
	var oneFit *kmedoids.Result
	for _, g := range fits {
		// A whole run is timed per iteration, so it compares with itself,
		// or with the single-GPU run, not with one pass.
		name, compare := FitGPU, FitGPU
		if g == multi {
			name = OnGPUs(FitGPU, sp.GPUs)
		}
		var got *kmedoids.Result
		c := bench.Case{Variant: name, CompareWith: compare, Tol: 0, Params: with(params, "gpus", len(g.shards))}
		c.Run = func() (time.Duration, error) {
			start := time.Now()
			r, err := g.Fit(kmedoids.Config{K: sp.K, Medoids: medoids})
			if err != nil {
				return 0, err
			}
			got = r
			if g == shared {
				oneFit = r
			}
			c.Params["iterations"], c.Params["converged"], c.Params["cost"] = r.Iters, r.Iters < 100, r.Cost
			return time.Since(start) / time.Duration(max(1, r.Iters)), nil
		}
		c.Check = func() (bench.Checked, error) {
			if g == multi {
				if oneFit == nil || !slices.Equal(got.Medoids, oneFit.Medoids) || !slices.Equal(got.Labels, oneFit.Labels) {
					return bench.Checked{}, fmt.Errorf("the run differs from the single-GPU run")
				}
				return bench.Checked{Worst: -1}, nil
			}
			l, d := make([]int32, n), make([]float64, n)
			if err := g.Assign(got.Medoids, l, d); err != nil {
				return bench.Checked{}, err
			}
			if !slices.Equal(l, got.Labels) {
				return bench.Checked{}, fmt.Errorf("the final labels are not the assignment of the final medoids")
			}
			_, err := checkLabels(m, got.Medoids, l, d, sample)
			return bench.Checked{Worst: -1}, err
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// with returns a copy of p with one more parameter.
func with(p bench.Params, key string, v any) bench.Params {
	q := maps.Clone(p)
	q[key] = v
	return q
}

// recordKernels records the GPU time of the kernels of a pass: the slowest
// shard's (kernel_ms), its share of FP32 peak in useful flops
// (kernel_pct_peak, on one GPU), and each shard's time (shard_ms: the
// load balance).
func recordKernels(p bench.Params, shards []ShardStats, timeOf func(ShardStats) time.Duration, flops, peakGFLOPS float64) {
	var slowest float64
	each := make([]string, len(shards))
	for i, s := range shards {
		ms := float64(timeOf(s)) / 1e6
		slowest = max(slowest, ms)
		each[i] = fmt.Sprintf("%.3f", ms)
	}
	p["kernel_ms"] = slowest
	if len(shards) == 1 && slowest > 0 && peakGFLOPS > 0 {
		p["kernel_pct_peak"] = 100 * flops / (slowest / 1e3) / 1e9 / peakGFLOPS
	}
	if len(shards) > 1 {
		p["shard_ms"] = strings.Join(each, ",")
	}
}
