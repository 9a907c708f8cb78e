package kmeans

import (
	"fmt"

	"gpulab/datasets"
	"gpulab/engine"
)

// Materialize generates every row of a Gaussian mixture into memory. It
// refuses, with an *engine.MemoryError, a mixture whose N×D float32 values
// the host cannot hold.
func Materialize(b datasets.Blobs) (*Matrix, error) {
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("kmeans: %w", err)
	}
	what := fmt.Sprintf("kmeans: %d×%d blobs", b.N, b.D)
	if err := engine.CheckHostMemory(what, "X as float32", engine.BytesOf(4*float64(b.N)*float64(b.D))); err != nil {
		return nil, err
	}
	x := &Matrix{N: b.N, D: b.D, X: make([]float32, b.N*b.D)}
	b.Rows(0, b.N, x.X)
	return x, nil
}

// Blobs is the data set of a suite size: the Gaussian mixture the kmeans
// suite clusters (seed 1).
func (s Spec) Blobs() datasets.Blobs { return datasets.Blobs{N: s.N, D: s.D, K: s.K, Seed: 1} }

// Impurity counts the points that a clustering puts with another true
// group's points: in each cluster, the points whose group (truth(i)) is not
// the cluster's most common one. 0 means every cluster holds one group only.
func Impurity(labels []int32, truth func(i int) int) int {
	count := map[int32]map[int]int{} // cluster -> group -> points
	for i, l := range labels {
		if count[l] == nil {
			count[l] = map[int]int{}
		}
		count[l][truth(i)]++
	}
	impure := 0
	for _, groups := range count {
		total, most := 0, 0
		for _, c := range groups {
			total += c
			most = max(most, c)
		}
		impure += total - most
	}
	return impure
}
