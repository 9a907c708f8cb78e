package sqfd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gpulab/datasets"
	"gpulab/engine/cluster/kmedoids"
	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
)

// The GPU tests compare every kernel with the float64 CPU reference on
// random signatures of 1 to 40 centroids (so tiles end anywhere), with a
// far-away outlier that forms a cluster of its own when it is a medoid. They
// skip, saying why, where there is no CUDA device.

var testKernels = []Kernel{{Gaussian, 0.5}, {Heuristic, 1}}

// testMetric is n synthetic signatures of 1..cmax centroids plus, last, an
// outlier 100 units away from everything.
func testMetric(t *testing.T, n, cmax int, k Kernel) *Metric {
	t.Helper()
	s, err := datasets.SyntheticSignatures(n, 1, cmax, Features, 7)
	if err != nil {
		t.Fatal(err)
	}
	far := make([]float32, 2*(Features+1))
	for i := range far {
		far[i] = 100 + float32(i%(Features+1))
	}
	far[Features], far[2*Features+1] = 0.5, 0.5
	s.Append(far)
	m, err := NewMetric(s, k)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkAssign checks GPU labels and distances of every signature against
// the CPU (check.go).
func checkAssign(t *testing.T, name string, m *Metric, medoids []int, labels []int32, dist []float64) {
	t.Helper()
	items := make([]int, m.Len())
	for i := range items {
		items[i] = i
	}
	if _, err := checkLabels(m, medoids, labels, dist, items); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

// checkUpdate checks the GPU's new medoids against the CPU's update from
// the same labels (check.go).
func checkUpdate(t *testing.T, name string, m *Metric, labels []int32, medoids, got []int) {
	t.Helper()
	want, _ := kmedoids.Update(m, labels, medoids)
	if err := checkMedoids(m, labels, got, want); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

func newGPU(t *testing.T, ctxs []*cuda.Context, m *Metric, opt GPUOptions) *KMedoidsGPU {
	t.Helper()
	g, err := NewKMedoidsGPU(ctxs, m, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// twoContexts returns devices 0 and 1, or device 0 twice on a machine with
// one GPU: two shards on one device run the whole multi-GPU logic.
func twoContexts(t *testing.T) []*cuda.Context {
	ctx := cudatest.Context(t)
	if n, _ := cuda.DeviceCount(); n >= 2 {
		other, err := cuda.NewContext(1)
		if err != nil {
			t.Fatal(err)
		}
		return []*cuda.Context{ctx, other}
	}
	return []*cuda.Context{ctx, ctx}
}

// TestGPUDistances: cross_pairs against Distance, for both kernels, 7 and 2
// features, random pairs and each signature with itself; and the worked
// example of Beecks et al. (SQFD 0.808).
func TestGPUDistances(t *testing.T) {
	ctx := cudatest.Context(t)
	beecks := &datasets.Signatures{Dim: 2, Index: []int32{0, 2, 5}, Data: []float32{3, 3, 0.5, 8, 7, 0.5, 4, 7, 0.5, 9, 5, 0.25, 8, 1, 0.25}}
	d, err := NewDeviceSignatures(ctx, beecks, Kernel{Heuristic, 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Distances([]int32{0, 1}, []int32{1, 1})
	d.Close()
	if err != nil || math.Abs(got[0]-0.808) > 5e-4 || got[1] != 0 {
		t.Errorf("Beecks et al.: %v, %v; want [0.808 0]", got, err)
	}
	for _, dim := range []int{7, 2} {
		s, err := datasets.SyntheticSignatures(300, 1, 40, dim, 3)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		var first, second []int32
		for i := range 300 {
			first, second = append(first, int32(i), int32(i)), append(second, int32(i), int32(rng.IntN(300)))
		}
		for _, k := range testKernels {
			d, err := NewDeviceSignatures(ctx, s, k)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Distances(first, second)
			d.Close()
			if err != nil {
				t.Fatal(err)
			}
			for p := range got {
				a, b := s.Centroids(int(first[p])), s.Centroids(int(second[p]))
				want, _ := Distance(a, b, dim, k)
				bound := roundoff(1e-4*(SelfSimilarity(a, dim, k)+SelfSimilarity(b, dim, k)), want) + 1e-6*want
				if math.Abs(got[p]-want) > bound {
					t.Errorf("dim %d %v: pair (%d, %d): %g, CPU %g", dim, k, first[p], second[p], got[p], want)
					break
				}
			}
		}
	}
}

// TestGPUAssign: both assignment kernels against the CPU, for K = 1, 7 (with
// the outlier, a cluster of one) and 40, on 1001 + 1 signatures.
func TestGPUAssign(t *testing.T) {
	ctx := cudatest.Context(t)
	for _, kern := range testKernels {
		m := testMetric(t, cudatest.Size(1001, 301), 40, kern)
		n := m.Len()
		for _, variant := range []string{Naive, Shared} {
			g := newGPU(t, []*cuda.Context{ctx}, m, GPUOptions{Assign: variant})
			for _, k := range []int{1, 7, 40} {
				medoids, err := kmedoids.InitialMedoids(kmedoids.CPU(m), kmedoids.Config{K: k, Init: kmedoids.Random, Seed: uint64(k)})
				if err != nil {
					t.Fatal(err)
				}
				if k == 7 {
					medoids[3] = n - 1
				}
				labels, dist := make([]int32, n), make([]float64, n)
				if err := g.Assign(medoids, labels, dist); err != nil {
					t.Fatal(err)
				}
				checkAssign(t, fmt.Sprintf("%v %s K=%d", kern, variant, k), m, medoids, labels, dist)
			}
		}
	}
}

// TestGPUClusters: step 03 on two shards of one run gives the CPU's
// clusterList and offsets exactly, the signatures in cluster order, tiles of
// at most 512 centroids, and work prefix sums that add up to Σ C².
func TestGPUClusters(t *testing.T) {
	m := testMetric(t, cudatest.Size(3000, 600), 40, Kernel{Gaussian, 0.5})
	n, k := m.Len(), 9
	g := newGPU(t, twoContexts(t), m, GPUOptions{})
	labels := make([]int32, n)
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range labels {
		labels[i] = int32(rng.IntN(k - 1)) // cluster k-1 stays empty
	}
	labels[n-1] = 0
	medoids := make([]int, k)
	for c := range medoids {
		medoids[c] = c
	}
	if _, _, err := g.Update(labels, medoids); err != nil {
		t.Fatal(err)
	}
	s := g.shards[0]
	list, err := cuda.Download[int32](s.list, n)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cuda.Download[int32](s.info, infoLen(k))
	if err != nil {
		t.Fatal(err)
	}
	ci := splitInfo(raw, k)
	wantList, wantOffsets := kmedoids.Clusters(labels, k)
	if !slices.Equal(list, wantList) || !slices.Equal(ci.offsets, wantOffsets) {
		t.Fatalf("clusterList or offsets differ from the CPU's: offsets %v, want %v", ci.offsets, wantOffsets)
	}
	sortedIndex, err := cuda.Download[int32](s.sortedIndex, n+1)
	if err != nil {
		t.Fatal(err)
	}
	sorted, err := cuda.Download[float32](s.sorted, 8*int(sortedIndex[n]))
	if err != nil {
		t.Fatal(err)
	}
	var wantWork int64
	for c := range k {
		var cc int32
		for p := wantOffsets[c]; p < wantOffsets[c+1]; p++ {
			cc += m.Sigs.Index[list[p]+1] - m.Sigs.Index[list[p]]
		}
		if ci.centroids[c] != cc {
			t.Errorf("cluster %d: %d centroids, want %d", c, ci.centroids[c], cc)
		}
		wantWork += int64(cc) * int64(cc)
	}
	for p, i := range list {
		want := padRecords(&datasets.Signatures{Dim: Features, Index: []int32{0, m.Sigs.Index[i+1] - m.Sigs.Index[i]}, Data: m.Sigs.Centroids(int(i))})
		if got := sorted[8*sortedIndex[p] : 8*sortedIndex[p+1]]; !slices.Equal(got, want) {
			t.Fatalf("row %d (signature %d) in cluster order: %v, want %v", p, i, got, want)
		}
	}
	tiles, err := cuda.Download[int32](s.scoreTileFirst, s.tiles+1)
	if err != nil {
		t.Fatal(err)
	}
	for b := range s.tiles {
		if c := sortedIndex[tiles[b+1]] - sortedIndex[tiles[b]]; c > tileThreads || tiles[b] > tiles[b+1] {
			t.Fatalf("tile %d: rows [%d, %d), %d centroids", b, tiles[b], tiles[b+1], c)
		}
	}
	if tiles[0] != 0 || tiles[s.tiles] != int32(n) {
		t.Errorf("tiles cover rows [%d, %d) of %d", tiles[0], tiles[s.tiles], n)
	}
	prefix, err := cuda.Download[int64](s.work, s.tiles+1)
	if err != nil {
		t.Fatal(err)
	}
	if prefix[s.tiles] != wantWork {
		t.Errorf("the tiles' work adds up to %d, want Σ C² = %d", prefix[s.tiles], wantWork)
	}
	st := g.Stats()
	if st[0].Rows[0] != 0 || st[0].Rows[1] != st[1].Rows[0] || st[1].Rows[1] != n || st[0].Work+st[1].Work != wantWork {
		t.Errorf("score shares %v and %v (work %d + %d), want rows [0, %d) split, work %d", st[0].Rows, st[1].Rows, st[0].Work, st[1].Work, n, wantWork)
	}
}

// TestGPUUpdate: both score variants, with every cluster big, every cluster
// small and a mix, against the CPU's update from the same labels; the raw
// scores too. Under compute-sanitizer, on 301 signatures, not 1001.
func TestGPUUpdate(t *testing.T) {
	ctx := cudatest.Context(t)
	mix := int64(cudatest.Size(2000, 300)) // BigCluster mix²: some clusters big, some small
	for _, kern := range testKernels {
		m := testMetric(t, cudatest.Size(1001, 151), 40, kern)
		n := m.Len()
		for _, k := range []int{1, 7} {
			medoids, err := kmedoids.InitialMedoids(kmedoids.CPU(m), kmedoids.Config{K: k, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if k == 7 {
				medoids[6] = n - 1 // the outlier: a cluster of one
			}
			labels, dist := make([]int32, n), make([]float64, n)
			kmedoids.Assign(m, medoids, labels, dist)
			want, wantEvals := kmedoids.Update(m, labels, medoids)
			for _, tc := range []struct {
				variant string
				big     int64
			}{{Naive, 0}, {Shared, 0}, {Shared, 1}, {Shared, math.MaxInt64}, {Shared, mix * mix}} {
				name := fmt.Sprintf("%v K=%d %s big=%d", kern, k, tc.variant, tc.big)
				g := newGPU(t, []*cuda.Context{ctx}, m, GPUOptions{Scores: tc.variant, BigCluster: tc.big})
				got, evals, err := g.Update(labels, medoids)
				if err != nil {
					t.Fatal(err)
				}
				if err := checkMedoids(m, labels, got, want); err != nil {
					t.Errorf("%s: %v", name, err)
				}
				if evals != wantEvals {
					t.Errorf("%s: %d evaluations, want %d", name, evals, wantEvals)
				}
				s := g.shards[0]
				scores, err := cuda.Download[uint64](s.score, n)
				if err != nil {
					t.Fatal(err)
				}
				list, offsets := kmedoids.Clusters(labels, k)
				for c := range k {
					members := list[offsets[c]:offsets[c+1]]
					for p := offsets[c]; p < offsets[c+1]; p += 17 {
						want, bound := m.scoreOf(int(list[p]), members)
						if gs := math.Ldexp(float64(scores[p]), -32); math.Abs(gs-want) > bound {
							t.Fatalf("%s: cluster %d, signature %d: score %g, CPU %g (bound %g)", name, c, list[p], gs, want, bound)
						}
					}
				}
			}
		}
	}
}

// TestGPUFit: the GPU run from the CPU's initial medoids against the CPU,
// step by step; if no rounding tie made them part, the GPU's Fit ends on the
// CPU's medoids and labels.
func TestGPUFit(t *testing.T) {
	ctx := cudatest.Context(t)
	for _, kern := range testKernels {
		m := testMetric(t, cudatest.Size(600, 200), 20, kern)
		init, err := kmedoids.InitialMedoids(kmedoids.CPU(m), kmedoids.Config{K: 8, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		g := newGPU(t, []*cuda.Context{ctx}, m, GPUOptions{BigCluster: 100 * 100})
		want, err := kmedoids.Fit(m, kmedoids.Config{K: 8, Medoids: init})
		if err != nil {
			t.Fatal(err)
		}
		if !lockstep(t, fmt.Sprint(kern), g, m, init) {
			continue
		}
		got, err := g.Fit(kmedoids.Config{K: 8, Medoids: init})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Medoids, want.Medoids) || !slices.Equal(got.Labels, want.Labels) || got.Iters != want.Iters {
			t.Errorf("%v: medoids %v after %d iterations, CPU %v after %d", kern, got.Medoids, got.Iters, want.Medoids, want.Iters)
		}
		if math.Abs(got.Cost-want.Cost) > 1e-4*want.Cost || got.Evaluations != want.Evaluations {
			t.Errorf("%v: cost %g, %d evaluations; CPU %g, %d", kern, got.Cost, got.Evaluations, want.Cost, want.Evaluations)
		}
	}
}

// lockstep runs the GPU and the CPU passes from the same medoids, each
// update from the CPU's labels. It reports whether they agreed to the end;
// a difference must be a rounding tie (the test fails otherwise), after
// which the runs may rightly part.
func lockstep(t *testing.T, name string, g *KMedoidsGPU, m *Metric, medoids []int) bool {
	n := m.Len()
	labels, dist := make([]int32, n), make([]float64, n)
	want, wantDist := make([]int32, n), make([]float64, n)
	for it := range 50 {
		if err := g.Assign(medoids, labels, dist); err != nil {
			t.Fatal(err)
		}
		kmedoids.Assign(m, medoids, want, wantDist)
		if !slices.Equal(labels, want) {
			checkAssign(t, name, m, medoids, labels, dist)
			t.Logf("%s: iteration %d: a rounding tie in the assignment; the runs part", name, it)
			return false
		}
		next, _, err := g.Update(want, medoids)
		if err != nil {
			t.Fatal(err)
		}
		if wantNext, _ := kmedoids.Update(m, want, medoids); !slices.Equal(next, wantNext) {
			checkUpdate(t, name, m, want, medoids, next)
			t.Logf("%s: iteration %d: a rounding tie in the scores; the runs part", name, it)
			return false
		}
		if slices.Equal(next, medoids) {
			return true
		}
		medoids = next
	}
	return true
}

// TestGPUShards: two shards (two GPUs, or two on one) give exactly the
// single-GPU run: medoids, labels and every cost; for both pairs of
// variants and both kernels. Under compute-sanitizer, 400 signatures for 3
// iterations, not 1500 for 6.
func TestGPUShards(t *testing.T) {
	ctxs := twoContexts(t)
	n := cudatest.Size(1500, 181)
	for _, kern := range testKernels {
		m := testMetric(t, n, 40, kern)
		for _, opt := range []GPUOptions{{}, {Assign: Naive, Scores: Naive}, {BigCluster: int64(n) * int64(n)}} {
			cfg := kmedoids.Config{K: 6, Seed: 9, MaxIters: cudatest.Size(6, 3)}
			one, err := newGPU(t, ctxs[:1], m, opt).Fit(cfg)
			if err != nil {
				t.Fatal(err)
			}
			two := newGPU(t, ctxs, m, opt)
			got, err := two.Fit(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Medoids, one.Medoids) || !slices.Equal(got.Labels, one.Labels) || !slices.Equal(got.History, one.History) {
				t.Errorf("%v %+v: two shards: medoids %v, costs %v; one: %v, %v", kern, opt, got.Medoids, got.History, one.Medoids, one.History)
			}
			st := two.Stats()
			if st[0].Items[0] != 0 || st[0].Items[1] != st[1].Items[0] || st[1].Items[1] != m.Len() {
				t.Errorf("%v %+v: assignment shares %v and %v", kern, opt, st[0].Items, st[1].Items)
			}
		}
	}
}

func TestGPUBadInput(t *testing.T) {
	ctx := cudatest.Context(t)
	m := testMetric(t, 50, 5, Kernel{Gaussian, 1})
	g := newGPU(t, []*cuda.Context{ctx}, m, GPUOptions{})
	n := m.Len()
	labels, dist := make([]int32, n), make([]float64, n)
	if err := g.Assign([]int{0, n}, labels, dist); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("medoid 1 is signature %d, outside 0..%d", n, n-1)) {
		t.Errorf("a medoid out of range: %v", err)
	}
	labels[7] = 3
	if _, _, err := g.Update(labels, []int{0, 1}); err == nil || !strings.Contains(err.Error(), "signature 7 has label 3; want 0..1") {
		t.Errorf("a label out of range: %v", err)
	}
	if _, err := g.Fit(kmedoids.Config{K: n + 1}); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("K > N: %v", err)
	}
	wide := &datasets.Signatures{Dim: Features, Index: []int32{0, 513}, Data: make([]float32, 513*(Features+1))}
	for c := range 513 {
		wide.Data[c*(Features+1)+Features] = 1
	}
	mw, err := NewMetric(wide, Kernel{Gaussian, 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewKMedoidsGPU([]*cuda.Context{ctx}, mw, GPUOptions{}); err == nil || !strings.Contains(err.Error(), "513 centroids") {
		t.Errorf("a signature of 513 centroids: %v", err)
	}
	deep := &datasets.Signatures{Dim: 16, Index: []int32{0, 1}, Data: make([]float32, 17)}
	deep.Data[16] = 1
	if _, err := NewDeviceSignatures(ctx, deep, Kernel{Gaussian, 1}); err == nil || !strings.Contains(err.Error(), "16 features") {
		t.Errorf("16 features: %v", err)
	}
	if _, err := NewKMedoidsGPU(nil, m, GPUOptions{}); err == nil {
		t.Error("no contexts accepted")
	}
}
