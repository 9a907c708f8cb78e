package lfm2

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Sampling chooses each generated token. The zero value is greedy (the
// most likely token). With Temperature > 0 the logits are divided by it and
// a token is drawn from their softmax, restricted to the smallest set of
// most likely tokens whose probabilities reach TopP (nucleus sampling;
// TopP 0 or 1 means all tokens). Seed makes a run reproducible.
type Sampling struct {
	Temperature float64
	TopP        float64
	Seed        uint64
}

// check refuses what the engines cannot sample with, whatever a caller
// checked: a temperature that is negative, NaN or infinite (+Inf would
// draw uniformly, ignoring the model), and a top-p outside [0, 1].
func (s Sampling) check() error {
	if !(s.Temperature >= 0) || math.IsInf(s.Temperature, 1) || !(s.TopP >= 0 && s.TopP <= 1) {
		return fmt.Errorf("lfm2: sampling with temperature %g and top-p %g: want a finite temperature >= 0 and top-p in [0, 1]", s.Temperature, s.TopP)
	}
	return nil
}

// picker returns the function that picks a token from one position's logits.
func (s Sampling) picker() func([]float32) int {
	if s.Temperature == 0 {
		return Argmax
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x6c666d32))
	return func(logits []float32) int { return s.pick(logits, rng.Float64()) }
}

// pick draws the token at cumulative probability u in [0, 1) of the
// tempered, nucleus-restricted distribution.
func (s Sampling) pick(logits []float32, u float64) int {
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	p := make([]float64, len(idx))
	var total float64
	top := float64(logits[idx[0]])
	for r, i := range idx {
		p[r] = math.Exp((float64(logits[i]) - top) / s.Temperature)
		total += p[r]
	}
	keep, cum := len(idx), 0.0
	if s.TopP > 0 && s.TopP < 1 {
		for r := range p {
			if cum += p[r] / total; cum >= s.TopP {
				keep = r + 1
				break
			}
		}
	}
	var kept float64
	for _, v := range p[:keep] {
		kept += v
	}
	u *= kept
	for r := range keep {
		if u -= p[r]; u < 0 {
			return idx[r]
		}
	}
	return idx[keep-1]
}
