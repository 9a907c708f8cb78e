package sqfd

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gpulab/datasets"
	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cpu"
)

// Two suites on synthetic signatures (datasets.SyntheticSignatures, 7
// features, Gaussian kernel). Sizes are
// "sigs:n=N[,k=K][,cmin=10][,cmax=40][,gpus=G][,big=B]". Flops are the useful
// SQFD flops: FlopsPerPair for every centroid pair of every cross term
// evaluated. Times are wall clock (host calls that end with their results
// on the host); on CUDA a record's params add kernel_ms, the GPU time of the
// kernels alone (events), and kernel_pct_peak, its share of FP32 peak.
//
//	sqfd      distance throughput over N pairs (i, i+1): CPU serial and
//	          parallel; on CUDA the cross_pairs kernel
//	kmedoids  one assignment pass (N·K distances) and one score pass (Σ|C|²
//	          distances), timed separately, from the same k-medoids++ medoids;
//	          on CUDA the steps 01/02 and 04/05, the passes on G GPUs
//	          (gpus=G, from lab bench --device all-gpus), and whole runs
//	          (cuda_fit: ms per iteration, iterations to converge). The CPU
//	          reference runs while its two passes take under 4·10¹⁰ flops.
func init() {
	for _, s := range []bench.Suite{
		{Name: "sqfd", Doc: "SQFD distance throughput on synthetic signatures (Gaussian kernel): CPU serial and parallel, CUDA cross_pairs", Cases: sqfdCases,
			Sizes: func(engine.Info) []string { return []string{"sigs:n=20000"} }},
		{Name: "kmedoids", Doc: "k-medoids with SQFD: the assignment and score passes, timed separately; CPU reference, CUDA steps 01-05, multi-GPU, whole runs", Cases: kmedoidsCases, Amend: AsRun,
			Sizes: func(dev engine.Info) []string {
				if dev.Kind == engine.CUDA {
					return []string{"sigs:n=5000,k=20", "sigs:n=100000,k=100"}
				}
				return []string{"sigs:n=2000,k=20"}
			}},
	} {
		bench.Register(s)
	}
}

// SigSpec is a parsed size of the sqfd and kmedoids suites.
type SigSpec struct{ N, K, CMin, CMax, GPUs, Big int }

// ParseSigSpec reads "sigs:n=N[,k=K][,cmin=C][,cmax=C][,gpus=G][,big=B]".
func ParseSigSpec(s string) (SigSpec, error) {
	sp := SigSpec{K: 10, CMin: 10, CMax: 40, GPUs: 1}
	if !strings.HasPrefix(strings.TrimSpace(s), "sigs:") {
		return sp, fmt.Errorf("sqfd: size %q: want sigs:n=N[,k=K][,cmin=C][,cmax=C][,gpus=G][,big=B]", s)
	}
	if err := bench.ParseFields(s, "sigs:", map[string]*int{"n": &sp.N, "k": &sp.K, "cmin": &sp.CMin, "cmax": &sp.CMax, "gpus": &sp.GPUs, "big": &sp.Big}); err != nil {
		return sp, fmt.Errorf("sqfd: %w", err)
	}
	if sp.N <= 0 || sp.K <= 0 || sp.K > sp.N {
		return sp, fmt.Errorf("sqfd: size %q: need 0 < k <= n", s)
	}
	if sp.GPUs < 1 {
		return sp, fmt.Errorf("sqfd: size %q: need gpus >= 1", s)
	}
	return sp, nil
}

// setup parses a size of suite, refuses it with an *engine.MemoryError
// where need (the suite's memory for it on dev) does not fit, and generates
// its signatures.
func setup(dev *engine.Device, suite, size string, need func(*engine.Device, SigSpec) (host, device engine.Need)) (SigSpec, *Metric, error) {
	if dev.Kind != engine.CPU && dev.Kind != engine.CUDA {
		return SigSpec{}, nil, fmt.Errorf("sqfd: the suites run on the CPU and CUDA, not on %s", dev.ID)
	}
	sp, err := ParseSigSpec(size)
	if err != nil {
		return sp, nil, err
	}
	if sp.GPUs > 1 && dev.Kind != engine.CUDA {
		return sp, nil, fmt.Errorf("sqfd: gpus=%d needs a CUDA device, not %s", sp.GPUs, dev.ID)
	}
	host, device := need(dev, sp)
	if err := dev.CheckRun(suite+" "+size, host, device); err != nil {
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
	sp, m, err := setup(dev, "sqfd", size, sqfdMemory)
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
	if dev.Kind != engine.CUDA {
		return cases, nil, nil
	}
	c, closePairs, err := pairsCase(dev, m, flops, want)
	if err != nil {
		return nil, nil, err
	}
	c.Params = bench.Params{"n": n, "cmin": sp.CMin, "cmax": sp.CMax}
	return append(cases, c), closePairs, nil
}

// metricMemory is the host memory of a size's signatures: at most N·CMax
// centroids of Features+1 float32s and N+1 offsets, generated and then
// normalized into a copy by NewMetric, and each signature's self term (a
// float64).
// Like the other figures of sizes here, it is in float64, so that no size
// overflows a product (engine.BytesOf).
func metricMemory(sp SigSpec) float64 {
	n := float64(sp.N)
	return 2*(4*n*float64(sp.CMax)*(Features+1)+4*(n+1)) + 8*n
}

// deviceSignaturesMemory is the device memory of NewDeviceSignatures for
// sp: the N+1 offsets, at most N·CMax centroids padded to whole float4s,
// and a float32 self term per signature.
func deviceSignaturesMemory(sp SigSpec) float64 {
	n := float64(sp.N)
	return 4*(n+1) + 16*((Features+4)/4)*n*float64(sp.CMax) + 4*n
}

// sqfdMemory is the memory the sqfd suite holds for sp on dev: on the host
// the signatures and metric (metricMemory), the reference distances and
// the two CPU cases' (3·8·N); on CUDA also the pairs' indices (2·4·N), the
// padded centroids uploaded (as on the device) and the distances read back
// (8·N); on the device the signatures (deviceSignaturesMemory) and the
// pairs' two indices and distance (3·4·N).
func sqfdMemory(dev *engine.Device, sp SigSpec) (host, device engine.Need) {
	n := float64(sp.N)
	hostBytes, holds := metricMemory(sp)+3*8*n, "the signatures, their normalized copy and the distances of the reference and the CPU cases"
	if dev.Kind != engine.CUDA {
		return engine.Need{Bytes: engine.BytesOf(hostBytes), Holds: holds}, device
	}
	dsig := deviceSignaturesMemory(sp)
	hostBytes += 2*4*n + (dsig - 4*(n+1) - 4*n) + 8*n
	holds += ", the pairs, the padded centroids and the distances read back"
	return engine.Need{Bytes: engine.BytesOf(hostBytes), Holds: holds},
		engine.Need{Bytes: engine.BytesOf(dsig + 3*4*n), Holds: "the signatures and the pairs with their distances"}
}

// pairsCase times cross_pairs over the pairs (i, i+1) on the GPU (events:
// the kernel alone).
func pairsCase(dev *engine.Device, m *Metric, flops float64, want []float64) (bench.Case, func(), error) {
	n := m.Len()
	d, err := NewDeviceSignatures(dev.CUDA, m.Sigs, m.Kernel)
	if err != nil {
		return bench.Case{}, nil, err
	}
	first, second := make([]int32, n), make([]int32, n)
	for i := range n {
		first[i], second[i] = int32(i), int32((i+1)%n)
	}
	p, err := d.UploadPairs(first, second)
	if err != nil {
		d.Close()
		return bench.Case{}, nil, err
	}
	timer, err := dev.CUDA.NewTimer(nil)
	if err != nil {
		p.Close()
		d.Close()
		return bench.Case{}, nil, err
	}
	var got []float64
	return bench.Case{Variant: "cuda_pairs", Flops: flops, Tol: 1e-4,
			Reset: func() error { got = nil; return nil },
			Run:   func() (time.Duration, error) { return timer.Time(func() error { return p.Run(nil) }) },
			Check: func() (bench.Checked, error) {
				var err error
				if got, err = p.Distances(); err != nil {
					return bench.Checked{}, err
				}
				return compare(got, want), nil
			},
		}, func() {
			timer.Destroy()
			p.Close()
			d.Close()
		}, nil
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
