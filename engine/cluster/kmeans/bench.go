package kmeans

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/cpu"
	"gpulab/engine/cuda"
)

// The "kmeans" suite: Lloyd iterations on Gaussian blobs, from the same
// k-means++ centers for every variant. Sizes are
// "blobs:n=N,d=D,k=K[,iters=I][,batch=B]"; batch > 0 streams X from pinned
// host memory. A record's time is the mean time of one iteration
// (assignment and update); bytes are one pass over X; flops are 2·N·D·K.
// Small sizes (N·D·K up to 2·10⁹) also run the CPU reference, which is then
// the baseline and the check; larger ones check every variant against the
// seed's block_per_point, which is then the baseline. A streamed size adds
// h2d_copy, one pass of X from pinned memory to the device in the same
// batches without kernels, as the baseline: "vs baseline" is then the
// fraction of the host-to-device bandwidth a streamed iteration reaches.
func init() {
	bench.Register(bench.Suite{
		Name: "kmeans",
		Doc:  "Lloyd's k-means on Gaussian blobs: CPU reference; the CUDA ladder of assignment and update kernels (kernels/cuda/kmeans/NN_*.cu); ms per iteration",
		Sizes: func(dev engine.Info) []string {
			if dev.Kind == engine.CUDA {
				return []string{"blobs:n=1000000,d=1536,k=25,iters=10", "blobs:n=1000000,d=1536,k=25,iters=10,batch=131072"}
			}
			return []string{"blobs:n=20000,d=64,k=25,iters=10"}
		},
		Cases: cases,
	})
}

// Spec is a parsed size of the kmeans suite.
type Spec struct{ N, D, K, Iters, Batch int }

// ParseSpec reads "blobs:n=N,d=D,k=K[,iters=I][,batch=B]".
func ParseSpec(s string) (Spec, error) {
	sp := Spec{Iters: 10}
	if !strings.HasPrefix(strings.TrimSpace(s), "blobs:") {
		return sp, fmt.Errorf("kmeans: size %q: want blobs:n=N,d=D,k=K[,iters=I][,batch=B]", s)
	}
	if err := bench.ParseFields(s, "blobs:", map[string]*int{"n": &sp.N, "d": &sp.D, "k": &sp.K, "iters": &sp.Iters, "batch": &sp.Batch}); err != nil {
		return sp, fmt.Errorf("kmeans: %w", err)
	}
	if sp.N <= 0 || sp.D <= 0 || sp.K <= 0 || sp.Iters <= 0 {
		return sp, fmt.Errorf("kmeans: size %q: n, d, k and iters must be positive", s)
	}
	return sp, nil
}

func cases(dev *engine.Device, size string) ([]bench.Case, func(), error) {
	sp, err := ParseSpec(size)
	if err != nil {
		return nil, nil, err
	}
	host, device := suiteMemory(dev, sp)
	if err := dev.CheckRun("kmeans "+size, host, device); err != nil {
		return nil, nil, err
	}
	x, err := Materialize(sp.Blobs())
	if err != nil {
		return nil, nil, err
	}
	init, err := initialCenters(x, Config{K: sp.K, Seed: 2})
	if err != nil {
		return nil, nil, err
	}
	cfg := Config{K: sp.K, MaxIters: sp.Iters, Centers: init}
	small := sp.small()
	base := func(variant string) bench.Case { return baseCase(sp, variant) }
	var cases []bench.Case
	var ref *Result // the reference result: the CPU's, or the baseline's
	if small || dev.Kind == engine.CPU {
		c := base("cpu_reference")
		c.Baseline = true
		c.Run = func() (time.Duration, error) {
			start := time.Now()
			r, err := Fit(x, cfg)
			if err != nil {
				return 0, err
			}
			ref = r
			c.Params["inertia"] = r.Inertia
			return time.Since(start) / time.Duration(r.Iters+1), nil
		}
		c.Check = func() (bench.Checked, error) { return bench.Checked{Worst: -1}, nil }
		cases = append(cases, c)
	}
	if dev.Kind != engine.CUDA {
		return cases, nil, nil
	}
	var open *GPU // one variant's GPU at a time: each holds its own copy of X
	closeOpen := func() {
		if open != nil {
			open.Close()
			open = nil
		}
	}
	// The baseline runs first: on large sizes it is the others' reference.
	order := Variants
	if !small {
		order = append([]string{"block_per_point"}, slices.DeleteFunc(slices.Clone(Variants), func(v string) bool { return v == "block_per_point" })...)
	}
	if sp.Batch > 0 {
		c, err := h2dCase(dev, x, sp.Batch, base("h2d_copy"))
		if err != nil {
			return nil, nil, err
		}
		cases = append(cases, c)
	}
	for _, v := range order {
		c := base(v)
		c.Baseline = !small && sp.Batch == 0 && v == "block_per_point"
		if v == "tensor_3xtf32" { // its products run on the tensor cores: its share of peak is of theirs
			c.Params["precision"] = "tf32"
		}
		var got *Result
		var g *GPU
		c.Run = func() (time.Duration, error) {
			if g == nil {
				closeOpen()
				var err error
				if g, err = NewGPU(dev.CUDA, x, sp.K, GPUOptions{Variant: v, Batch: sp.Batch}); err != nil {
					return 0, err
				}
				open = g
			}
			r, err := g.Fit(cfg)
			if err != nil {
				return 0, err
			}
			got = r
			st := g.Stats()
			c.Params["inertia"], c.Params["resident"] = r.Inertia, st.Resident
			if len(st.Phases) > 0 { // where a resident iteration's time goes
				phases := map[string]float64{}
				for _, ph := range st.Phases {
					phases[ph.Name] = float64(ph.Time) / float64(time.Millisecond)
				}
				c.Params["phases_ms"] = phases
			}
			if !small && v == "block_per_point" {
				ref = r
			}
			return st.MeanIter(), nil
		}
		c.Check = func() (bench.Checked, error) {
			if got == nil || ref == nil {
				return bench.Checked{}, fmt.Errorf("%s: no result or no reference to check against", v)
			}
			if n := inconsistent(x, got); n > 0 {
				return bench.Checked{}, fmt.Errorf("%s: %d points are not labelled with their nearest center", v, n)
			}
			return bench.Checked{MaxRelErr: math.Abs(got.Inertia-ref.Inertia) / ref.Inertia, Worst: -1}, nil
		}
		cases = append(cases, c)
	}
	return cases, closeOpen, nil
}

// baseCase is variant's case at sp, without its Run and Check. A streamed
// size's device cases (h2d_copy and every variant) have no roof: each
// iteration brings X over the host link, whose peak the engine does not
// know, so a share of the HBM or FMA peak would say nothing (% roof "-").
func baseCase(sp Spec, variant string) bench.Case {
	return bench.Case{Variant: variant, Tol: 1e-4, Bytes: 4 * float64(sp.N) * float64(sp.D), Flops: 2 * float64(sp.N) * float64(sp.D) * float64(sp.K),
		NoRoof: sp.Batch > 0 && variant != "cpu_reference",
		Params: bench.Params{"n": sp.N, "d": sp.D, "k": sp.K, "iters": sp.Iters, "batch": sp.Batch}}
}

// small reports whether the CPU reference runs on a CUDA device too.
func (sp Spec) small() bool { return float64(sp.N)*float64(sp.D)*float64(sp.K) <= 2e9 }

// suiteMemory is the memory the kmeans suite holds for sp on dev, so that a
// size too large is refused before X is generated. The host holds X as
// float32 (4·N·D), k-means++'s candidates (8·N of indices, 4·min(N,
// InitSample)·D of points) and the reference's labels and distances with
// the labels of its result (16·N). On CUDA the reference runs only on small
// sizes; each variant's labels are read back and kept (4·N each), and a
// streamed size pins a copy of X (4·N·D). The device holds X (4·N·D), or
// in streamed sizes two batches of it (2·4·B·D); the centers and their sums
// (2·4·K·D), the centers' norms, counts and inertia; four arrays of a
// float or index per point (labels, distances, norms and the sorted order,
// 16·N, the most any variant has); and the fused variant's partial sums,
// K·D floats per resident block on each of two streams, at most
// MaxThreadsPerSM/256 blocks of 256 threads per SM.
func suiteMemory(dev *engine.Device, sp Spec) (host, device engine.Need) {
	// In float64, so that no size overflows a product (engine.BytesOf).
	n, d, k := float64(sp.N), float64(sp.D), float64(sp.K)
	x := 4 * n * d
	hostBytes, hostHolds := x+initBytes(n, d), "X (float32), k-means++'s candidates"
	if dev.Kind != engine.CUDA || sp.small() {
		hostBytes += 16 * n
		hostHolds += ", the reference's labels and distances"
	}
	if dev.Kind != engine.CUDA {
		return engine.Need{Bytes: engine.BytesOf(hostBytes), Holds: hostHolds}, device
	}
	hostBytes += 4 * n * float64(len(Variants))
	hostHolds += fmt.Sprintf(", the labels of %d variants", len(Variants))
	deviceBytes, deviceHolds := x, "X"
	if sp.Batch > 0 {
		hostBytes += x
		hostHolds += " and X pinned for streaming"
		deviceBytes, deviceHolds = 2*4*min(float64(sp.Batch), n)*d, "two batches of X"
	}
	props := dev.CUDA.Properties()
	blocks := float64(max(1, props.MaxThreadsPerSM/256) * props.SMs)
	deviceBytes += 2*4*k*d + 4*max(k, 32) + 4*k + 8 + 16*n + 2*4*blocks*k*d
	deviceHolds += ", the centers and their sums, labels, distances, norms and order of the points, and the fused variant's partial sums"
	return engine.Need{Bytes: engine.BytesOf(hostBytes), Holds: hostHolds}, engine.Need{Bytes: engine.BytesOf(deviceBytes), Holds: deviceHolds}
}

// inconsistent counts the points of r whose label is not the nearest of
// r's own centers, beyond the float32 rounding of a distance. The GEMM
// variants compute |x|² - 2·x·c + |c|², whose rounding error grows with
// |x|² + |c|², not with the distance: a float32 dot product of D terms is
// off by about √D·2⁻²⁴·|x|·|c|. So a label is wrong only if some center is
// nearer by more than √D·2⁻²¹·(|x|² + |c|² + |c'|²), which also covers the
// direct form. (A relative 10⁻⁵ of the distance, tried first, flagged about
// 300 of 10⁶ points on an H200, all of them such rounding cases.)
// Two runs from the same centers drift apart by float32 rounding in their
// sums, and on a boundary between two close centers that moves points
// legitimately; so runs are checked each against its own centers, and
// against each other by inertia.
func inconsistent(x *Matrix, r *Result) int {
	d, k := x.D, r.K
	zero := make([]float32, d)
	norms := make([]float64, k)
	for c := range k {
		norms[c] = cpu.SquaredDistance(r.Centers[c*d:(c+1)*d], zero)
	}
	slack := math.Sqrt(float64(d)) * math.Ldexp(1, -21)
	var bad atomic.Int64
	cpu.Parallel(x.N, 1024, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row, l := x.X[i*d:(i+1)*d], int(r.Labels[i])
			xn := cpu.SquaredDistance(row, zero)
			mine := cpu.SquaredDistance(row, r.Centers[l*d:(l+1)*d])
			for c := range k {
				if dc := cpu.SquaredDistance(row, r.Centers[c*d:(c+1)*d]); dc < mine-slack*(xn+norms[l]+norms[c]) {
					bad.Add(1)
					break
				}
			}
		}
	})
	return int(bad.Load())
}

// h2dCase times the copies of a streamed iteration alone: X from pinned host
// memory in batches of batch rows, alternating two device buffers on two
// streams.
func h2dCase(dev *engine.Device, x *Matrix, batch int, c bench.Case) (bench.Case, error) {
	ctx := dev.CUDA
	rowBytes := 4 * x.D
	var host *cuda.HostBuffer
	var bufs [2]*cuda.Buffer
	var streams [2]*cuda.Stream
	setup := func() error {
		var err error
		if host, err = ctx.AllocHost(len(x.X) * 4); err != nil {
			return err
		}
		copy(cuda.HostSlice[float32](host), x.X)
		for i := range 2 {
			if bufs[i], err = ctx.Alloc(min(batch, x.N) * rowBytes); err != nil {
				return err
			}
			if streams[i], err = ctx.NewStream(); err != nil {
				return err
			}
		}
		return nil
	}
	c.Baseline, c.Flops = true, 0
	c.Run = func() (time.Duration, error) {
		if host == nil {
			if err := setup(); err != nil {
				return 0, err
			}
		}
		start := time.Now()
		for b, row := 0, 0; row < x.N; b, row = b+1, row+batch {
			m := min(batch, x.N-row)
			if err := cuda.CopyHtoDAsync(bufs[b%2], 0, host, row*rowBytes, m*rowBytes, streams[b%2]); err != nil {
				return 0, err
			}
		}
		for _, s := range streams {
			if err := s.Synchronize(); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	c.Check = func() (bench.Checked, error) {
		for i := range 2 {
			bufs[i].Free()
			streams[i].Destroy()
		}
		host.Free()
		host = nil
		return bench.Checked{Worst: -1}, nil
	}
	return c, nil
}
