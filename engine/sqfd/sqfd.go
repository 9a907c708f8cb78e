// Package sqfd is the Signature Quadratic Form Distance (Beecks, Uysal and
// Seidl, CIVR 2010) between feature signatures, and the extraction of
// signatures from images (features.go).
//
// A signature sums an object up as a few weighted centroids in a feature
// space: for an image, the means of clusters of pixel features, weighted by
// the clusters' shares of the pixels. Two signatures may have different
// numbers of centroids, and the centroids need not match up, so there is no
// vector difference to take the norm of. SQFD compares them through a
// similarity f between centroids instead. For S (centroids c_i, weights w_i)
// and Q (centroids q_j, weights v_j):
//
//	SQFD(S, Q)² = Σ_i Σ_i' w_i w_i' f(c_i, c_i') + Σ_j Σ_j' v_j v_j' f(q_j, q_j') − 2 Σ_i Σ_j w_i v_j f(c_i, q_j)
//
// the quadratic form of the concatenated weights (w, −v) with the matrix of
// similarities between all the centroids. When f is a positive-definite
// kernel, SQFD is the distance between the two signatures' weighted mean
// embeddings in the kernel's feature space, so it is a metric: symmetric,
// zero from a signature to itself, and it keeps the triangle inequality. Both
// similarities here are positive definite on every feature space: the
// Gaussian exp(−α·d²), and Beecks' heuristic 1/(α + d), because 1/(α + √t)
// is completely monotone in t = d² (Schoenberg's theorem).
//
// The first two sums each depend on one signature only (SelfSimilarity): a
// distance matrix over N signatures computes them N times, once each, and
// only the cross sum for every pair. That is the work a GPU kernel does.
//
// A signature is a []float32 of centroid records, dim features and then the
// weight (the layout of datasets.Signatures). Weights are used as given: the
// distance compares distributions only when every signature's weights have the
// same total, so callers normalize them (Normalize); Extract's sum to 1.
package sqfd

import (
	"fmt"
	"gpulab/engine/cpu"
	"math"
)

// Similarity is the shape of the similarity between two centroids.
type Similarity int

const (
	Gaussian  Similarity = iota // exp(−α·d²)
	Heuristic                   // 1/(α + d), Beecks et al.'s heuristic similarity
)

// String returns the name ParseSimilarity reads.
func (s Similarity) String() string {
	switch s {
	case Gaussian:
		return "gaussian"
	case Heuristic:
		return "heuristic"
	}
	return fmt.Sprintf("Similarity(%d)", int(s))
}

// ParseSimilarity reads "gaussian" or "heuristic".
func ParseSimilarity(s string) (Similarity, error) {
	for _, sim := range []Similarity{Gaussian, Heuristic} {
		if s == sim.String() {
			return sim, nil
		}
	}
	return 0, fmt.Errorf("sqfd: similarity %q: want gaussian or heuristic", s)
}

// Kernel is a similarity with its parameter: f(c, q) as a function of the
// squared Euclidean distance d² between the centroids' features.
type Kernel struct {
	Sim   Similarity
	Alpha float64 // > 0: the Gaussian's decay per squared unit, or the heuristic's offset
}

// Validate reports an unknown similarity or an Alpha that is not positive.
func (k Kernel) Validate() error {
	if k.Sim != Gaussian && k.Sim != Heuristic {
		return fmt.Errorf("sqfd: unknown similarity %v", k.Sim)
	}
	if !(k.Alpha > 0) || math.IsInf(k.Alpha, 1) {
		return fmt.Errorf("sqfd: alpha %g: want a finite alpha > 0", k.Alpha)
	}
	return nil
}

// Of returns f at squared distance d2 (NaN for an unknown similarity).
func (k Kernel) Of(d2 float64) float64 {
	switch k.Sim {
	case Gaussian:
		return math.Exp(-k.Alpha * d2)
	case Heuristic:
		return 1 / (k.Alpha + math.Sqrt(d2))
	}
	return math.NaN()
}

// Distance returns SQFD(a, b) for two signatures of centroid records with
// dim features each, summed in float64. Distance(a, a, ...) is exactly 0,
// and a square that rounding makes negative counts as 0.
func Distance(a, b []float32, dim int, k Kernel) (float64, error) {
	if err := k.Validate(); err != nil {
		return 0, err
	}
	if err := check(a, dim, "signature a"); err != nil {
		return 0, err
	}
	if err := check(b, dim, "signature b"); err != nil {
		return 0, err
	}
	d2 := cross(a, a, dim, k) + cross(b, b, dim, k) - 2*cross(a, b, dim, k)
	return math.Sqrt(max(0, d2)), nil
}

// SelfSimilarity returns Σ_i Σ_i' w_i w_i' f(c_i, c_i'), a signature's own
// term of SQFD², or NaN where Distance would report an error.
func SelfSimilarity(a []float32, dim int, k Kernel) float64 {
	if k.Validate() != nil || check(a, dim, "") != nil {
		return math.NaN()
	}
	return cross(a, a, dim, k)
}

// Normalize scales the weights of a signature so that they sum to 1. It
// fails, changing nothing, when their sum is not positive.
func Normalize(centroids []float32, dim int) error {
	if err := check(centroids, dim, "signature"); err != nil {
		return err
	}
	var sum float64
	for i := dim; i < len(centroids); i += dim + 1 {
		sum += float64(centroids[i])
	}
	if !(sum > 0) {
		return fmt.Errorf("sqfd: weights sum to %g; need a positive total", sum)
	}
	for i := dim; i < len(centroids); i += dim + 1 {
		centroids[i] = float32(float64(centroids[i]) / sum)
	}
	return nil
}

// check reports a signature that is empty, not whole records of dim
// features and a weight, or holds a NaN or Inf.
func check(s []float32, dim int, name string) error {
	switch {
	case dim <= 0:
		return fmt.Errorf("sqfd: %d features per centroid; need at least 1", dim)
	case len(s) == 0:
		return fmt.Errorf("sqfd: %s is empty", name)
	case len(s)%(dim+1) != 0:
		return fmt.Errorf("sqfd: %s has %d values, not a whole number of centroids of %d features and a weight", name, len(s), dim)
	}
	for i, v := range s {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			what := fmt.Sprintf("feature %d", i%(dim+1))
			if i%(dim+1) == dim {
				what = "the weight"
			}
			return fmt.Errorf("sqfd: %s, centroid %d: %s is %g", name, i/(dim+1), what, v)
		}
	}
	return nil
}

// cross returns Σ_i Σ_j w_i v_j f(a_i, b_j).
func cross(a, b []float32, dim int, k Kernel) float64 {
	var s float64
	for i := 0; i < len(a); i += dim + 1 {
		ai, wi := a[i:i+dim], float64(a[i+dim])
		for j := 0; j < len(b); j += dim + 1 {
			s += wi * float64(b[j+dim]) * k.Of(cpu.SquaredDistance(ai, b[j:j+dim]))
		}
	}
	return s
}
