package kmeans

import (
	"math"
	"testing"

	"gpulab/datasets"
	"gpulab/engine"
	"gpulab/engine/bench"
	"gpulab/engine/enginetest"
)

// TestSuiteChecksMemory: the suite refuses, before generating X, a size
// whose X and per-point arrays the host cannot hold; Materialize refuses X
// alone; a small size still runs.
func TestSuiteChecksMemory(t *testing.T) {
	t.Setenv(engine.HostMemoryEnv, "1000000")
	dev, err := engine.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	suite, _ := bench.Lookup("kmeans")
	_, err = bench.Run(suite, dev, []string{"blobs:n=100000,d=64,k=25"}, bench.Options{})
	// X, k-means++'s indices and candidates, the reference's labels,
	// distances and result labels.
	enginetest.WantMemoryError(t, err, 4*100000*64+8*100000+4*65536*64+(4+8+4)*100000)
	// 2^62 points: 2^64 bytes of X, 0 in uint64 arithmetic; counted in
	// float64, the need is more than any uint64.
	_, err = bench.Run(suite, dev, []string{"blobs:n=4611686018427387904,d=1,k=2"}, bench.Options{})
	enginetest.WantMemoryError(t, err, math.MaxUint64, "needs more than 18446744.1 TB")
	_, err = Materialize(datasets.Blobs{N: 1 << 62, D: 1, K: 2, Seed: 1})
	enginetest.WantMemoryError(t, err, math.MaxUint64)
	_, err = Materialize(datasets.Blobs{N: 1000, D: 1000, K: 2, Seed: 1})
	enginetest.WantMemoryError(t, err, 4*1000*1000)
	if _, err := bench.Run(suite, dev, []string{"blobs:n=200,d=4,k=3,iters=2"}, bench.Options{}); err != nil {
		t.Errorf("a small size: %v", err)
	}
}

// TestFitChecksMemory: Fit refuses, before k-means++ or any pass, a run
// whose labels, distances and candidates the host cannot hold besides X.
func TestFitChecksMemory(t *testing.T) {
	x, err := Materialize(datasets.Blobs{N: 1000, D: 4, K: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(engine.HostMemoryEnv, "1000")
	_, err = Fit(x, Config{K: 3, Seed: 1, MaxIters: 2})
	// 8·N of indices, 4·N·D of candidates (N is under InitSample), 4·N of
	// labels, 12·N of labels and distances in the passes.
	enginetest.WantMemoryError(t, err, 8*1000+4*1000*4+4*1000+12*1000)
}
