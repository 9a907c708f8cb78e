package sqfd

import (
	"fmt"
	"math"

	"gpulab/datasets"
	"gpulab/engine/cuda"
	"gpulab/kernels"
)

// The CUDA side of SQFD: a signature set resident on a GPU, and the kernels
// of kernels/cuda/kmedoids, compiled by NVRTC for the set's feature count
// and similarity. kmedoids_gpu.go runs k-medoids on top of it.
const (
	// tileThreads is TPB: the threads of a tile block, and so the most
	// centroids a tile, or a single signature, may have on the GPU.
	tileThreads = 512
	// tileGroup is GROUP: targets reduced together in a tile block.
	tileGroup = 8
	// maxGPUDim keeps a centroid within four float4s.
	maxGPUDim = 15
	// stageBytes is the shared memory that stages targets (medoids, or the
	// members of a cluster) in the tile kernels.
	stageBytes = 32 << 10
)

// DeviceSignatures is a signature set resident on one GPU: the index, the
// centroids as float4 records (the features, zero padding, the weight last:
// two float4s for 7 features) and each signature's self-similarity S(i, i),
// computed on the GPU when the set is uploaded. Weights are used as given.
type DeviceSignatures struct {
	ctx          *cuda.Context
	kernel       Kernel
	dim, n       int
	centroids    int // all signatures together
	maxCentroids int // of one signature
	index        *cuda.Buffer
	data         *cuda.Buffer
	self         *cuda.Buffer
	funcs        map[string]*cuda.Function // by "file/kernel"
}

// NewDeviceSignatures validates s (datasets.Signatures.Validate) and k,
// uploads the set to ctx and computes the self-similarities.
func NewDeviceSignatures(ctx *cuda.Context, s *datasets.Signatures, k Kernel) (_ *DeviceSignatures, err error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Dim > maxGPUDim {
		return nil, fmt.Errorf("sqfd: %d features per centroid; the GPU kernels take at most %d", s.Dim, maxGPUDim)
	}
	n := s.Len()
	d := &DeviceSignatures{ctx: ctx, kernel: k, dim: s.Dim, n: n, centroids: int(s.Index[n]), funcs: map[string]*cuda.Function{}}
	for i := range n {
		d.maxCentroids = max(d.maxCentroids, int(s.Index[i+1]-s.Index[i]))
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if d.index, err = cuda.Upload(ctx, s.Index); err != nil {
		return nil, fmt.Errorf("sqfd: index of %d signatures: %w", n, err)
	}
	if d.data, err = cuda.Upload(ctx, padRecords(s)); err != nil {
		return nil, fmt.Errorf("sqfd: %d centroids: %w", d.centroids, err)
	}
	if d.self, err = cuda.AllocSlice[float32](ctx, n); err != nil {
		return nil, err
	}
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	p, err := d.UploadPairs(ids, ids)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := p.Run(nil); err != nil {
		return nil, fmt.Errorf("sqfd: self-similarities: %w", err)
	}
	return d, cuda.CopyDtoD(d.self, p.cross, 4*n, nil)
}

// vectors is REC4 of the kernels: float4s per centroid.
func (d *DeviceSignatures) vectors() int { return (d.dim + 4) / 4 }

// padRecords lays the centroids out as the kernels read them: REC4 float4s
// each, the features first and the weight in the last float.
func padRecords(s *datasets.Signatures) []float32 {
	rec, vec := s.Dim+1, 4*((s.Dim+4)/4)
	c := len(s.Data) / rec
	out := make([]float32, c*vec)
	for i := range c {
		copy(out[i*vec:], s.Data[i*rec:i*rec+s.Dim])
		out[i*vec+vec-1] = s.Data[i*rec+s.Dim]
	}
	return out
}

// Close frees the device memory. The compiled modules stay in the
// context's cache, shared with every other user of the device.
func (d *DeviceSignatures) Close() {
	for _, b := range []*cuda.Buffer{d.index, d.data, d.self} {
		b.Free()
	}
}

// kparam is the similarity's run-time argument: −α·log2(e) for the
// Gaussian, which the kernels evaluate as 2^(kparam·d²), and α for the
// heuristic.
func (d *DeviceSignatures) kparam() float32 {
	if d.kernel.Sim == Gaussian {
		return float32(-d.kernel.Alpha * math.Log2E)
	}
	return float32(d.kernel.Alpha)
}

// function compiles (once per context, feature count and similarity) a
// file of kernels/cuda/kmedoids and returns one of its kernels.
func (d *DeviceSignatures) function(file, name string) (*cuda.Function, error) {
	if f, ok := d.funcs[file+"/"+name]; ok {
		return f, nil
	}
	src, err := kernels.CUDA("kmedoids/" + file)
	if err != nil {
		return nil, err
	}
	heuristic := 0
	if d.kernel.Sim == Heuristic {
		heuristic = 1
	}
	mod, err := d.ctx.Compile(cuda.Source{Name: "kmedoids/" + file + ".cu", Code: src, Headers: kernels.CUDAFamily.Headers(),
		Options: []string{fmt.Sprintf("-DSQFD_DIM=%d", d.dim), fmt.Sprintf("-DSQFD_HEURISTIC=%d", heuristic),
			fmt.Sprintf("-DTPB=%d", tileThreads), fmt.Sprintf("-DGROUP=%d", tileGroup)}})
	if err != nil {
		return nil, err
	}
	f, err := mod.Function(name)
	if err != nil {
		return nil, err
	}
	d.funcs[file+"/"+name] = f
	return f, nil
}

func (d *DeviceSignatures) launch(file, name string, cfg cuda.LaunchConfig, args ...any) error {
	f, err := d.function(file, name)
	if err != nil {
		return err
	}
	return f.Launch(cfg, args...)
}

// warps is a launch of one warp per item, 256 threads a block.
func warps(items int, s *cuda.Stream) cuda.LaunchConfig {
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: max(1, (items+7)/8)}, Block: cuda.Dim3{X: 256}, Stream: s}
}

// Pairs are pairs of signatures of a DeviceSignatures, uploaded once for
// any number of runs of the cross_pairs kernel.
type Pairs struct {
	d                    *DeviceSignatures
	first, second, cross *cuda.Buffer
	n                    int
	firstIDs, secondIDs  []int32
}

// UploadPairs checks and uploads the pairs (first[p], second[p]).
func (d *DeviceSignatures) UploadPairs(first, second []int32) (_ *Pairs, err error) {
	if len(first) != len(second) || len(first) == 0 {
		return nil, fmt.Errorf("sqfd: %d first and %d second signatures: want equal, non-zero counts", len(first), len(second))
	}
	for i := range first {
		if first[i] < 0 || int(first[i]) >= d.n || second[i] < 0 || int(second[i]) >= d.n {
			return nil, fmt.Errorf("sqfd: pair %d is (%d, %d); the set has signatures 0..%d", i, first[i], second[i], d.n-1)
		}
	}
	p := &Pairs{d: d, n: len(first), firstIDs: first, secondIDs: second}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if p.first, err = cuda.Upload(d.ctx, first); err != nil {
		return nil, err
	}
	if p.second, err = cuda.Upload(d.ctx, second); err != nil {
		return nil, err
	}
	if p.cross, err = cuda.AllocSlice[float32](d.ctx, p.n); err != nil {
		return nil, err
	}
	return p, nil
}

// Run queues the kernel on stream s (nil: the default stream).
func (p *Pairs) Run(s *cuda.Stream) error {
	return p.d.launch("rows", "cross_pairs", warps(p.n, s), p.d.data, p.d.index, p.first, p.second, p.n, p.d.kparam(), p.cross)
}

// Distances waits for the last Run and returns SQFD of every pair:
// √(S(a, a) + S(b, b) − 2·S(a, b)) from the float32 terms, 0 for a pair of
// the same signature.
func (p *Pairs) Distances() ([]float64, error) {
	if err := p.d.ctx.Synchronize(); err != nil {
		return nil, err
	}
	cross, err := cuda.Download[float32](p.cross, p.n)
	if err != nil {
		return nil, err
	}
	self, err := cuda.Download[float32](p.d.self, p.d.n)
	if err != nil {
		return nil, err
	}
	out := make([]float64, p.n)
	for i, c := range cross {
		a, b := p.firstIDs[i], p.secondIDs[i]
		if a != b {
			out[i] = math.Sqrt(max(0, float64(self[a])+float64(self[b])-2*float64(c)))
		}
	}
	return out, nil
}

// Close frees the pairs' device memory.
func (p *Pairs) Close() {
	for _, b := range []*cuda.Buffer{p.first, p.second, p.cross} {
		b.Free()
	}
}

// Distances returns SQFD(first[p], second[p]) for every pair, on the GPU.
func (d *DeviceSignatures) Distances(first, second []int32) ([]float64, error) {
	p, err := d.UploadPairs(first, second)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := p.Run(nil); err != nil {
		return nil, err
	}
	return p.Distances()
}

// PairDistances returns SQFD(a[p], b[p]) for every pair of signatures of dim
// features, on the GPU (cross_pairs, the kernel that gives a k-medoids run
// its self-similarities). Each signature is checked as Distance checks it;
// on the GPU its weights must also be non-negative with a positive sum.
func PairDistances(ctx *cuda.Context, a, b [][]float32, dim int, k Kernel) ([]float64, error) {
	if len(a) != len(b) || len(a) == 0 {
		return nil, fmt.Errorf("sqfd: %d first and %d second signatures: want equal, non-zero counts", len(a), len(b))
	}
	set := &datasets.Signatures{Dim: dim}
	first, second := make([]int32, len(a)), make([]int32, len(a))
	for p := range a {
		if err := check(a[p], dim, "signature a"); err != nil {
			return nil, fmt.Errorf("pair %d: %w", p, err)
		}
		if err := check(b[p], dim, "signature b"); err != nil {
			return nil, fmt.Errorf("pair %d: %w", p, err)
		}
		first[p], second[p] = int32(2*p), int32(2*p+1)
		set.Append(a[p])
		set.Append(b[p])
	}
	d, err := NewDeviceSignatures(ctx, set, k)
	if err != nil {
		return nil, fmt.Errorf("sqfd: on the GPU (signature 2p is pair p's a, 2p+1 its b): %w", err)
	}
	defer d.Close()
	return d.Distances(first, second)
}
