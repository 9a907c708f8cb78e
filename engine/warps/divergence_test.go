package warps

import (
	"math"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
)

// runOnce resets, runs and checks one case without the timing loop, so that
// the tests stay fast on PoCL.
func runOnce(t *testing.T, c bench.Case) {
	t.Helper()
	if c.Reset != nil {
		if err := c.Reset(); err != nil {
			t.Fatalf("%s: reset: %v", c.Variant, err)
		}
	}
	if _, err := c.Run(); err != nil {
		t.Fatalf("%s: run: %v", c.Variant, err)
	}
	chk, err := c.Check()
	if err != nil {
		t.Fatalf("%s: check: %v", c.Variant, err)
	}
	if !(chk.MaxRelErr <= c.Tol) {
		t.Errorf("%s: max relative error %.3g at %d (got %v, want %v) exceeds %.3g",
			c.Variant, chk.MaxRelErr, chk.Worst, chk.Got, chk.Want, c.Tol)
	}
}

func TestDivergenceVariants(t *testing.T) {
	wantFrac := map[string]float64{"uniform": 0, "warp_split": 0, "alternate_lanes": 1, "branchless": 1}
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		// 16K+5 elements: a partial work-group and a partial 32-lane group.
		cases, closeFn, err := gpuSuite(divergenceBuild)(dev, "16389")
		if err != nil {
			t.Fatal(err)
		}
		defer closeFn()
		if len(cases) != len(divVariants) {
			t.Fatalf("%d cases, want %d", len(cases), len(divVariants))
		}
		for _, c := range cases {
			t.Run(c.Variant, func(t *testing.T) {
				runOnce(t, c)
				frac, ok := c.Params["divergent_fraction"].(float64)
				if !ok {
					t.Fatalf("divergent_fraction %v is not a number", c.Params["divergent_fraction"])
				}
				if w, ok := wantFrac[c.Variant]; ok && frac != w {
					t.Errorf("divergent_fraction %v, want %v", frac, w)
				}
				if p, ok := c.Params["p"].(float64); ok {
					// About 1-(1-p)^32 of the groups mix A and B.
					if w := 1 - math.Pow(1-p, divWarp) - math.Pow(p, divWarp); math.Abs(frac-w) > 0.05 {
						t.Errorf("p=%v: divergent_fraction %v, want about %v", p, frac, w)
					}
				}
				if c.Baseline != (c.Variant == "uniform") {
					t.Errorf("baseline %v", c.Baseline)
				}
			})
		}
	})
}

// TestDivergenceChecksTheMask makes sure a wrong branch fails the check: the
// two branches' results differ by far more than the tolerance.
func TestDivergenceChecksTheMask(t *testing.T) {
	for _, x := range []float32{-1, -0.3, 0, 0.7, 0.999} {
		a := divChain(x, 0.999, 0.0005, divIters)
		b := divChain(x, 0.998, -0.001, divIters)
		if d := math.Abs(float64(a - b)); d < 1e-2 {
			t.Errorf("x=%v: branches give %v and %v, too close to tell apart", x, a, b)
		}
	}
}

func TestDivergenceNeedsAGPU(t *testing.T) {
	dev, err := engine.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if _, _, err := gpuSuite(divergenceBuild)(dev, "1K"); err == nil {
		t.Error("divergence ran on the CPU device")
	}
	if _, err := elements("zero"); err == nil {
		t.Error("a bad size parsed")
	}
}
