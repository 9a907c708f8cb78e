package sqfd

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"gpulab/engine/cluster/kmedoids"
	"gpulab/engine/cuda"
)

// k-medoids with SQFD on one or more GPUs: the steps of
// kernels/cuda/kmedoids behind kmedoids.Passes, so that kmedoids.Run drives
// them exactly as it drives the CPU reference.
//
// A Shard is one GPU's part of a run. It keeps the whole (normalized) set
// resident, as the seed does, assigns its share of the signatures, scores
// its share of the candidates, and trades results with the other shards
// through an Exchange. KMedoidsGPU runs a shard per context in goroutines of
// this process with a HostExchange. A shard computes in integers and in one
// fixed summation order, so the shards agree bit for bit, and the run on
// several GPUs returns the single-GPU run's medoids, labels and costs.

// Variants of the two passes.
const (
	Naive  = "naive"  // steps 01 and 04: a thread per signature, from global memory
	Shared = "shared" // steps 02 and 05: tiles, shared memory, small and big clusters
)

// bigChunk is the targets (cluster members) per block of score_big.
const bigChunk = 128

// GPUOptions configures a GPU run.
type GPUOptions struct {
	Assign string // Naive or Shared (default)
	Scores string // Naive or Shared (default)
	// BigCluster is the small/big cut-off of the shared score kernels: a
	// cluster of C centroids (all its signatures' together) is big when C²,
	// its score work in centroid pairs, is at least this. Default:
	// 512², a cluster with more centroids than one tile holds.
	BigCluster int64
}

func (o GPUOptions) withDefaults() (GPUOptions, error) {
	if o.Assign == "" {
		o.Assign = Shared
	}
	if o.Scores == "" {
		o.Scores = Shared
	}
	if o.BigCluster == 0 {
		o.BigCluster = tileThreads * tileThreads
	}
	for _, v := range []string{o.Assign, o.Scores} {
		if v != Naive && v != Shared {
			return o, fmt.Errorf("sqfd: GPU variant %q: want %q or %q", v, Naive, Shared)
		}
	}
	if o.BigCluster < 0 {
		return o, fmt.Errorf("sqfd: big-cluster cut-off %d: want a positive count of centroid pairs", o.BigCluster)
	}
	return o, nil
}

// ShardStats are one GPU's share of a run and the GPU times (events) of its
// last passes.
type ShardStats struct {
	Device        string
	Items         [2]int        // the signatures it assigns: [lo, hi)
	Rows          [2]int        // the candidates it scored last, as positions in cluster order
	Work          int64         // their score work, in centroid pairs
	Assign        time.Duration // the assignment kernel(s), medoid gather included
	Clusters      time.Duration // the cluster preprocessing (step 03)
	Scores        time.Duration // the score kernels and the per-cluster minima
	AssignKernels string
	ScoreKernels  string
}

// Shard is one GPU's part of a k-medoids run over a Metric's signatures.
// Its Assign and Update are collective: every shard of the run must call
// them, each from its own goroutine (or process), with the same arguments.
type Shard struct {
	rank   int
	ex     Exchange
	dev    *DeviceSignatures
	opt    GPUOptions
	n      int
	cap    int // a tile's rows start within cap centroids (bucket_tiles)
	trows  int // targets staged per chunk
	shared int // dynamic shared memory of a tile kernel

	tiles                 int // tiles of the dataset, and as many of its rows in cluster order
	tile0, tile1          int // this shard's dataset tiles
	itemLo, itemHi        int // and the signatures in them
	labels, dist          *cuda.Buffer
	tileFirst             *cuda.Buffer
	list, sortedIndex     *cuda.Buffer
	sortedSelf, sorted    *cuda.Buffer
	scoreTileFirst, score *cuda.Buffer
	work                  *cuda.Buffer // score work per tile, then its prefix sums
	chunks                int          // CHUNK-signature chunks of cluster_histogram

	k                                   int // capacity of the K-sized buffers below
	medoids, mindex, mself, mdata, info *cuda.Buffer
	counts, bestScore, bestPoint, big   *cuda.Buffer

	bufs     []*cuda.Buffer
	allocErr error // the first failed allocation
	events   [5]*cuda.Event
	stats    ShardStats
	dist32   []float32
}

const clusterChunk = 1024 // CHUNK of 03_clusters.cu

// NewShard uploads m's signatures to ctx and prepares rank's share of a run
// whose shards trade results through ex.
func NewShard(ctx *cuda.Context, m *Metric, rank int, ex Exchange, opt GPUOptions) (_ *Shard, err error) {
	if opt, err = opt.withDefaults(); err != nil {
		return nil, err
	}
	if rank < 0 || rank >= ex.Ranks() {
		return nil, fmt.Errorf("sqfd: shard rank %d of %d", rank, ex.Ranks())
	}
	dev, err := NewDeviceSignatures(ctx, m.Sigs, m.Kernel)
	if err != nil {
		return nil, err
	}
	s := &Shard{rank: rank, ex: ex, dev: dev, opt: opt, n: dev.n, stats: ShardStats{Device: ctx.ID()}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if dev.maxCentroids > tileThreads {
		return nil, fmt.Errorf("sqfd: a signature has %d centroids; the GPU kernels hold at most %d per signature", dev.maxCentroids, tileThreads)
	}
	if err := checkScoreRange(m, dev.n); err != nil {
		return nil, err
	}
	vec := dev.vectors()
	s.cap = tileThreads - dev.maxCentroids + 1
	s.trows = min(tileThreads, stageBytes/(16*vec*dev.maxCentroids))
	s.shared = tileSharedBytes + 16*vec*dev.maxCentroids*s.trows
	s.tiles = (dev.centroids + s.cap - 1) / s.cap
	s.chunks = (s.n + clusterChunk - 1) / clusterChunk
	n := s.n
	s.labels, s.dist, s.tileFirst = s.alloc(4*n), s.alloc(4*n), s.alloc(4*(s.tiles+1))
	s.list, s.sortedIndex, s.sortedSelf = s.alloc(4*n), s.alloc(4*(n+1)), s.alloc(4*n)
	s.scoreTileFirst, s.score, s.work = s.alloc(4*(s.tiles+1)), s.alloc(8*n), s.alloc(8*(s.tiles+1))
	if opt.Scores == Shared {
		s.sorted = s.alloc(16 * vec * dev.centroids)
	}
	for i := range s.events {
		if s.events[i], err = ctx.NewEvent(); err != nil {
			return nil, err
		}
	}
	if s.allocErr != nil {
		return nil, s.allocErr
	}
	if err := dev.launch("rows", "bucket_tiles", cuda.Grid1D(s.tiles+1, 256), dev.index, n, s.cap, s.tiles, s.tileFirst); err != nil {
		return nil, err
	}
	first, err := cuda.Download[int32](s.tileFirst, s.tiles+1)
	if err != nil {
		return nil, err
	}
	s.tile0, s.tile1 = evenShare(s.tiles, rank, ex.Ranks())
	s.itemLo, s.itemHi = int(first[s.tile0]), int(first[s.tile1])
	s.stats.Items = [2]int{s.itemLo, s.itemHi}
	s.dist32 = make([]float32, s.itemHi-s.itemLo)
	return s, nil
}

// tileSharedBytes is sizeof(Tile) of common.cuh rounded up to 16 bytes: the
// dynamic shared memory before a tile kernel's stage.
const tileSharedBytes = (4*(2*(tileThreads+1)+2*tileGroup*tileThreads) + 15) &^ 15

// checkScoreRange makes sure no score, a sum of up to N distances in 32.32
// fixed point, comes near 2³²: a distance is at most √(S(i,i) + S(j,j)).
func checkScoreRange(m *Metric, n int) error {
	top := 0.0
	for _, v := range m.self {
		top = max(top, v)
	}
	if bound := math.Sqrt(2*top) * float64(n); bound >= 1<<31 {
		return fmt.Errorf("sqfd: scores of %d signatures with distances up to %.3g could reach 2³¹, half the range of the GPU's 32.32 fixed point", n, math.Sqrt(2*top))
	}
	return nil
}

// alloc allocates a device buffer; after a failure it returns nil and
// allocErr holds the failure.
func (s *Shard) alloc(bytes int) *cuda.Buffer {
	if s.allocErr != nil {
		return nil
	}
	b, err := s.dev.ctx.Alloc(max(bytes, 8))
	if err != nil {
		s.allocErr = err
		return nil
	}
	s.bufs = append(s.bufs, b)
	return b
}

// growK sizes the K-dependent buffers for k clusters (they only grow, so a
// run allocates them once, and k-medoids++ once more).
func (s *Shard) growK(k int) error {
	if k <= s.k {
		return nil
	}
	old := []*cuda.Buffer{s.medoids, s.mindex, s.mself, s.mdata, s.info, s.counts, s.bestScore, s.bestPoint, s.big}
	for _, b := range old {
		b.Free()
	}
	s.bufs = slices.DeleteFunc(s.bufs, func(b *cuda.Buffer) bool { return slices.Contains(old, b) })
	s.k = 0 // until the new ones are all there
	if int64(k)*int64(s.chunks) > math.MaxInt32 {
		return fmt.Errorf("sqfd: K = %d clusters × %d chunks of %d signatures overflow the GPU histogram's int32 counts", k, s.chunks, clusterChunk)
	}
	s.medoids, s.mindex, s.mself = s.alloc(4*k), s.alloc(4*(k+1)), s.alloc(4*k)
	s.mdata = s.alloc(16 * s.dev.vectors() * s.dev.maxCentroids * k)
	s.info, s.counts = s.alloc(4*infoLen(k)), s.alloc(4*k*s.chunks)
	s.bestScore, s.bestPoint, s.big = s.alloc(8*k), s.alloc(4*k), s.alloc(4*(3*k+1))
	if s.allocErr != nil {
		return s.allocErr
	}
	s.k = k
	return nil
}

// Close frees the shard's device memory.
func (s *Shard) Close() {
	for _, b := range s.bufs {
		b.Free()
	}
	for _, e := range s.events {
		e.Destroy()
	}
	s.dev.Close()
}

// Len is the number of signatures.
func (s *Shard) Len() int { return s.n }

// Stats returns the shard's share and the times of its last passes.
func (s *Shard) Stats() ShardStats { return s.stats }

func at(b *cuda.Buffer, byteOffset int) cuda.DevicePtr { return b.Ptr() + cuda.DevicePtr(byteOffset) }

// Assign labels every signature with its nearest medoid, the shard's share
// on its GPU and the rest from the other shards.
func (s *Shard) Assign(medoids []int, labels []int32, dist []float64) error {
	if err := s.assignShare(medoids, labels, dist); err != nil {
		s.ex.Abort(err)
		return err
	}
	return s.ex.AllGather(s.rank, s.itemLo, s.itemHi, labels, dist)
}

func (s *Shard) assignShare(medoids []int, labels []int32, dist []float64) error {
	k := len(medoids)
	if len(labels) != s.n || len(dist) != s.n {
		return fmt.Errorf("sqfd: assign %d signatures into %d labels and %d distances", s.n, len(labels), len(dist))
	}
	ids := make([]int32, k)
	for c, m := range medoids {
		if m < 0 || m >= s.n {
			return fmt.Errorf("sqfd: medoid %d is signature %d, outside 0..%d", c, m, s.n-1)
		}
		ids[c] = int32(m)
	}
	if k == 0 {
		return errors.New("sqfd: assign with no medoids")
	}
	if err := s.growK(k); err != nil {
		return err
	}
	d := s.dev
	if err := cuda.CopyHtoD(s.medoids, ids); err != nil {
		return err
	}
	if err := s.events[0].Record(nil); err != nil {
		return err
	}
	if s.itemHi > s.itemLo {
		var err error
		switch s.opt.Assign {
		case Naive:
			s.stats.AssignKernels = "assign_naive"
			err = d.launch("01_assign_naive", "assign_naive", cuda.Grid1D(s.itemHi-s.itemLo, 256),
				d.data, d.index, s.itemLo, s.itemHi-s.itemLo, s.medoids, k, d.kparam(), s.labels, s.dist)
		case Shared:
			s.stats.AssignKernels = "select_rows, scan_int, gather_rows, assign_shared"
			if err = s.selectRows(s.medoids, k, s.mindex, s.mself, s.mdata); err == nil {
				err = d.launch("02_assign_shared", "assign_shared", s.tileLaunch(s.tile1-s.tile0),
					d.data, d.index, d.self, s.tileFirst, s.tile0, s.mdata, s.mindex, s.mself, s.medoids, k, s.trows, d.kparam(), s.labels, s.dist)
			}
		}
		if err != nil {
			return err
		}
	}
	if err := s.events[1].Record(nil); err != nil {
		return err
	}
	lo, hi := s.itemLo, s.itemHi
	if err := cuda.CopyDtoHAt(labels[lo:hi], s.labels, 4*lo); err != nil {
		return err
	}
	if err := cuda.CopyDtoHAt(s.dist32, s.dist, 4*lo); err != nil {
		return err
	}
	for i, v := range s.dist32 {
		dist[lo+i] = float64(v)
	}
	var err error
	s.stats.Assign, err = cuda.Elapsed(s.events[0], s.events[1])
	return err
}

// tileLaunch is a launch of blocks tile blocks.
func (s *Shard) tileLaunch(blocks int) cuda.LaunchConfig {
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: tileThreads}, SharedMem: s.shared}
}

// selectRows copies rows ids[0..count) of the set into a contiguous
// selection: its index, self-similarities and centroids.
func (s *Shard) selectRows(ids *cuda.Buffer, count int, index, self, data *cuda.Buffer) error {
	d := s.dev
	if err := d.launch("rows", "select_rows", cuda.Grid1D(count+1, 256), ids, count, d.index, d.self, index, self); err != nil {
		return err
	}
	if err := d.launch("rows", "scan_int", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 1024}}, index, count+1); err != nil {
		return err
	}
	return d.launch("rows", "gather_rows", warps(count, nil), ids, count, d.index, d.data, index, data)
}

// Update returns each cluster's new medoid: the shard scores its share of
// the candidates and the shards agree on each cluster's best.
func (s *Shard) Update(labels []int32, medoids []int) ([]int, int64, error) {
	best, evals, err := s.scoreShare(labels, len(medoids))
	if err != nil {
		s.ex.Abort(err)
		return nil, 0, err
	}
	if err := s.ex.AllReduceMin(s.rank, best); err != nil {
		return nil, 0, err
	}
	next := slices.Clone(medoids)
	for c, b := range best {
		if b.Point >= 0 {
			next[c] = int(b.Point)
		}
	}
	return next, evals, nil
}

func (s *Shard) scoreShare(labels []int32, k int) ([]Candidate, int64, error) {
	if len(labels) != s.n {
		return nil, 0, fmt.Errorf("sqfd: %d labels for %d signatures", len(labels), s.n)
	}
	for i, l := range labels {
		if l < 0 || int(l) >= k {
			return nil, 0, fmt.Errorf("sqfd: signature %d has label %d; want 0..%d", i, l, k-1)
		}
	}
	if err := s.growK(k); err != nil {
		return nil, 0, err
	}
	if err := cuda.CopyHtoD(s.labels, labels); err != nil {
		return nil, 0, err
	}
	if err := s.events[2].Record(nil); err != nil {
		return nil, 0, err
	}
	if err := s.clusters(k); err != nil {
		return nil, 0, fmt.Errorf("sqfd: cluster preprocessing: %w", err)
	}
	if err := s.events[3].Record(nil); err != nil {
		return nil, 0, err
	}
	raw := make([]int32, infoLen(k))
	if err := cuda.CopyDtoH(raw, s.info); err != nil {
		return nil, 0, err
	}
	ci := splitInfo(raw, k)
	b0, b1 := 0, s.tiles
	if s.ex.Ranks() > 1 {
		prefix, err := cuda.Download[int64](s.work, s.tiles+1)
		if err != nil {
			return nil, 0, err
		}
		b0, b1 = workShare(prefix, s.rank, s.ex.Ranks())
		s.stats.Work = prefix[b1] - prefix[b0]
	} else {
		s.stats.Work = 0
		for c := range k {
			s.stats.Work += int64(ci.centroids[c]) * int64(ci.centroids[c])
		}
	}
	var rows [2]int32
	if err := cuda.CopyDtoHAt(rows[:1], s.scoreTileFirst, 4*b0); err != nil {
		return nil, 0, err
	}
	if err := cuda.CopyDtoHAt(rows[1:], s.scoreTileFirst, 4*b1); err != nil {
		return nil, 0, err
	}
	r0, r1 := int(rows[0]), int(rows[1])
	s.stats.Rows = [2]int{r0, r1}
	if err := s.scores(ci, k, b0, b1, r0, r1); err != nil {
		return nil, 0, fmt.Errorf("sqfd: scores: %w", err)
	}
	if err := s.events[4].Record(nil); err != nil {
		return nil, 0, err
	}
	scores, err := cuda.Download[uint64](s.bestScore, k)
	if err != nil {
		return nil, 0, err
	}
	points, err := cuda.Download[int32](s.bestPoint, k)
	if err != nil {
		return nil, 0, err
	}
	best := make([]Candidate, k)
	for c := range best {
		best[c] = Candidate{scores[c], points[c]}
	}
	if s.stats.Clusters, err = cuda.Elapsed(s.events[2], s.events[3]); err != nil {
		return nil, 0, err
	}
	if s.stats.Scores, err = cuda.Elapsed(s.events[3], s.events[4]); err != nil {
		return nil, 0, err
	}
	return best, ci.evaluations(), nil
}

// clusters runs step 03 on the uploaded labels: clusterList, the offsets,
// the rows in cluster order and their tiles, each cluster's tiles and, on
// several GPUs, the prefix sums of the tiles' work.
func (s *Shard) clusters(k int) error {
	d, n := s.dev, s.n
	offsets, centroids, first, last := at(s.info, 0), at(s.info, 4*(k+1)), at(s.info, 4*(2*k+1)), at(s.info, 4*(3*k+1))
	one := cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 1024}}
	warpPerChunk := cuda.LaunchConfig{Grid: cuda.Dim3{X: s.chunks}, Block: cuda.Dim3{X: 32}}
	steps := []func() error{
		func() error { return s.counts.Memset(0, nil) },
		func() error { return s.info.Memset(0, nil) },
		func() error {
			return d.launch("03_clusters", "cluster_histogram", warpPerChunk, s.labels, d.index, n, s.chunks, s.counts, centroids)
		},
		func() error { return d.launch("rows", "scan_int", one, s.counts, k*s.chunks) },
		func() error {
			return d.launch("03_clusters", "cluster_offsets", cuda.Grid1D(k+1, 256), s.counts, k, s.chunks, n, offsets)
		},
		func() error {
			return d.launch("03_clusters", "cluster_scatter", warpPerChunk, s.labels, n, s.chunks, s.counts, s.list)
		},
		func() error {
			return d.launch("rows", "select_rows", cuda.Grid1D(n+1, 256), s.list, n, d.index, d.self, s.sortedIndex, s.sortedSelf)
		},
		func() error { return d.launch("rows", "scan_int", one, s.sortedIndex, n+1) },
		func() error {
			if s.sorted == nil {
				return nil
			}
			return d.launch("rows", "gather_rows", warps(n, nil), s.list, n, d.index, d.data, s.sortedIndex, s.sorted)
		},
		func() error {
			return d.launch("rows", "bucket_tiles", cuda.Grid1D(s.tiles+1, 256), s.sortedIndex, n, s.cap, s.tiles, s.scoreTileFirst)
		},
		func() error {
			return d.launch("03_clusters", "cluster_buckets", cuda.Grid1D(k, 256), offsets, s.sortedIndex, k, s.cap, first, last)
		},
		func() error {
			if s.ex.Ranks() == 1 {
				return nil
			}
			return d.launch("03_clusters", "bucket_work", cuda.Grid1D(s.tiles+1, 256),
				s.scoreTileFirst, s.tiles, s.sortedIndex, s.list, s.labels, centroids, s.work)
		},
		func() error {
			if s.ex.Ranks() == 1 {
				return nil
			}
			return d.launch("rows", "scan_long", one, s.work, s.tiles+1)
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// scores runs the score kernels on tiles [b0, b1) (rows [r0, r1)) and each
// cluster's minimum over those rows.
func (s *Shard) scores(ci clusterInfo, k, b0, b1, r0, r1 int) error {
	d := s.dev
	offsets, centroids := at(s.info, 0), at(s.info, 4*(k+1))
	if err := s.score.Memset(0, nil); err != nil {
		return err
	}
	switch s.opt.Scores {
	case Naive:
		s.stats.ScoreKernels = "score_naive"
		if r1 > r0 {
			if err := d.launch("04_scores_naive", "score_naive", cuda.Grid1D(r1-r0, 256),
				d.data, d.index, s.list, s.labels, offsets, r0, r1, d.kparam(), s.score); err != nil {
				return err
			}
		}
	case Shared:
		s.stats.ScoreKernels = "score_small, score_big"
		// The big clusters' list goes up first: a synchronous copy would
		// wait for score_small.
		w, err := planBig(ci, s.opt.BigCluster, b0, b1, bigChunk)
		if err != nil {
			return err
		}
		e := len(w.cluster)
		if err := cuda.CopyHtoD(s.big, slices.Concat(w.item, w.cluster, w.tile)); err != nil {
			return err
		}
		if b1 > b0 {
			if err := d.launch("05_scores_shared", "score_small", s.tileLaunch(b1-b0),
				s.sorted, s.sortedIndex, s.sortedSelf, s.scoreTileFirst, b0, s.list, s.labels, offsets, centroids,
				s.opt.BigCluster, s.trows, d.kparam(), s.score); err != nil {
				return err
			}
		}
		if w.items() > 0 {
			if err := d.launch("05_scores_shared", "score_big", s.tileLaunch(w.items()),
				s.sorted, s.sortedIndex, s.sortedSelf, s.scoreTileFirst, at(s.big, 0), at(s.big, 4*(e+1)), at(s.big, 4*(2*e+1)), e,
				offsets, bigChunk, s.trows, d.kparam(), s.score); err != nil {
				return err
			}
		}
	}
	return d.launch("03_clusters", "cluster_minima", warps(k, nil), s.score, s.list, offsets, k, r0, r1, s.bestScore, s.bestPoint)
}

// KMedoidsGPU runs k-medoids on several GPUs of this process (or on one): a
// Shard per context, each in its own goroutine, trading results through a
// HostExchange. It is a kmedoids.Passes; Fit runs kmedoids.Run on it.
type KMedoidsGPU struct {
	shards []*Shard
	ex     *HostExchange
	own    []hostArrays // each rank's own labels and distances (rank 0 uses the caller's)
}

type hostArrays struct {
	labels []int32
	dist   []float64
}

// NewKMedoidsGPU uploads m's signatures to every context: one shard each.
// The same context may appear twice, which runs two shards on one GPU: the
// multi-GPU logic, testable on one device.
func NewKMedoidsGPU(ctxs []*cuda.Context, m *Metric, opt GPUOptions) (*KMedoidsGPU, error) {
	if len(ctxs) == 0 {
		return nil, errors.New("sqfd: NewKMedoidsGPU needs at least one CUDA context")
	}
	g := &KMedoidsGPU{ex: NewHostExchange(len(ctxs))}
	for rank, ctx := range ctxs {
		s, err := NewShard(ctx, m, rank, g.ex, opt)
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("sqfd: shard %d on %s: %w", rank, ctx.ID(), err)
		}
		g.shards = append(g.shards, s)
		var own hostArrays
		if rank > 0 {
			own = hostArrays{make([]int32, s.n), make([]float64, s.n)}
		}
		g.own = append(g.own, own)
	}
	return g, nil
}

// Close frees every shard.
func (g *KMedoidsGPU) Close() {
	for _, s := range g.shards {
		s.Close()
	}
}

// Len is the number of signatures.
func (g *KMedoidsGPU) Len() int { return g.shards[0].n }

// Stats returns each shard's share and the GPU times of its last passes.
func (g *KMedoidsGPU) Stats() []ShardStats {
	out := make([]ShardStats, len(g.shards))
	for i, s := range g.shards {
		out[i] = s.stats
	}
	return out
}

// each runs fn for every shard in its own goroutine. A failed shard aborts
// the exchange, so the others return its error too; each returns the first.
func (g *KMedoidsGPU) each(fn func(rank int, s *Shard) error) error {
	errs := make([]error, len(g.shards))
	var wg sync.WaitGroup
	for rank, s := range g.shards {
		wg.Go(func() { errs[rank] = fn(rank, s) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Assign labels every signature with its nearest medoid (the lowest index
// on ties) and stores the distance to it.
func (g *KMedoidsGPU) Assign(medoids []int, labels []int32, dist []float64) error {
	return g.each(func(rank int, s *Shard) error {
		if rank == 0 {
			return s.Assign(medoids, labels, dist)
		}
		return s.Assign(medoids, g.own[rank].labels, g.own[rank].dist)
	})
}

// Update returns each cluster's new medoid and the distances evaluated.
func (g *KMedoidsGPU) Update(labels []int32, medoids []int) ([]int, int64, error) {
	var next []int
	var evals int64
	err := g.each(func(rank int, s *Shard) error {
		nx, ev, err := s.Update(labels, medoids)
		if rank == 0 {
			next, evals = nx, ev
		}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return next, evals, nil
}

// Fit runs k-medoids (kmedoids.Run) on the GPUs.
func (g *KMedoidsGPU) Fit(cfg kmedoids.Config) (*kmedoids.Result, error) { return kmedoids.Run(g, cfg) }
