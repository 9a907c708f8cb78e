package sqfd

import (
	"fmt"
	"math"
	"slices"

	"gpulab/datasets"
)

// Metric is the SQFD between the signatures of a set, as k-medoids needs it
// (it satisfies kmedoids.Metric). Weights are normalized to sum 1 per
// signature, as the seed's kernels do, and each signature's
// self-similarity Σ w·w'·f is computed once: a distance then costs only the
// cross term, |a|·|b| similarity evaluations.
type Metric struct {
	Sigs   *datasets.Signatures // the normalized copy
	Kernel Kernel
	self   []float64
}

// NewMetric validates s and k and prepares the metric.
func NewMetric(s *datasets.Signatures, k Kernel) (*Metric, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	norm := &datasets.Signatures{Dim: s.Dim, Index: slices.Clone(s.Index), Data: slices.Clone(s.Data)}
	m := &Metric{Sigs: norm, Kernel: k, self: make([]float64, s.Len())}
	for i := range m.self {
		c := norm.Centroids(i)
		if err := Normalize(c, s.Dim); err != nil {
			return nil, fmt.Errorf("sqfd: signature %d: %w", i, err)
		}
		m.self[i] = SelfSimilarity(c, s.Dim, k)
	}
	return m, nil
}

// Len is the number of signatures.
func (m *Metric) Len() int { return m.Sigs.Len() }

// Distance is the SQFD between signatures i and j.
func (m *Metric) Distance(i, j int) float64 {
	if i == j {
		return 0
	}
	d2 := m.self[i] + m.self[j] - 2*cross(m.Sigs.Centroids(i), m.Sigs.Centroids(j), m.Sigs.Dim, m.Kernel)
	return math.Sqrt(max(0, d2))
}

// Pairs is the number of centroid pairs a distance between i and j
// evaluates: the work of its cross term.
func (m *Metric) Pairs(i, j int) int {
	return int(m.Sigs.Index[i+1]-m.Sigs.Index[i]) * int(m.Sigs.Index[j+1]-m.Sigs.Index[j])
}

// FlopsPerPair counts the useful flops of one centroid pair of the cross
// term: a difference, a square and an add per feature, then α·d², the
// similarity (counted as one) and the weighted accumulation (two).
func FlopsPerPair(dim int) int { return 3*dim + 4 }
