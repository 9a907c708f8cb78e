package lfm2

import "fmt"

// The CPU reference's building blocks, exported for the checks that need
// them outside the package (engine/exercise's lfm2 exercises): the very
// functions Forward uses, behind checks of their inputs.

// RMSNorm sets dst = x / sqrt(mean(x²) + eps) · w, as Forward normalizes
// each row (the sum of squares in float64); dst may be x.
func RMSNorm(dst, x, w []float32, eps float64) error {
	if len(x) == 0 || len(dst) != len(x) || len(w) != len(x) {
		return fmt.Errorf("lfm2: RMSNorm of a row of %d into %d with %d weights: want equal, non-zero lengths", len(x), len(dst), len(w))
	}
	rmsNorm(dst, x, w, eps)
	return nil
}

// Route is the MoE router of one token, as Forward runs it: the
// c.ExpertsPerToken experts with the largest sigmoid(logit) + bias (the
// lower index on ties; no bias if bias is nil), largest first, and their
// weights: the unbiased sigmoid, divided by (their sum + 1e-6) if
// c.NormTopK, times c.RoutedScaling.
func Route(c *Config, logits, bias []float32) ([]int, []float32, error) {
	switch k := c.ExpertsPerToken; {
	case k < 1 || k > len(logits):
		return nil, nil, fmt.Errorf("lfm2: route %d of %d experts: want 1 <= k <= experts", k, len(logits))
	case bias != nil && len(bias) != len(logits):
		return nil, nil, fmt.Errorf("lfm2: route %d experts with %d biases", len(logits), len(bias))
	}
	idx, wts := route(c, logits, bias)
	return idx, wts, nil
}
