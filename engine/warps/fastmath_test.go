package warps

import (
	"testing"

	"gpulab/engine"
)

func TestFastMathVariants(t *testing.T) {
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		cases, closeFn, err := gpuSuite(fastmathBuild)(dev, "4099") // a partial work-group
		if err != nil {
			t.Fatal(err)
		}
		defer closeFn()
		if len(cases) != len(fastVariants) {
			t.Fatalf("%d cases, want %d", len(cases), len(fastVariants))
		}
		for _, c := range cases {
			t.Run(c.Variant, func(t *testing.T) {
				runOnce(t, c)
				if c.Baseline != (c.Variant == "precise") {
					t.Errorf("baseline %v", c.Baseline)
				}
				if f, _ := c.Params["functions"].(string); f == "" {
					t.Errorf("no functions in params %v", c.Params)
				}
			})
		}
	})
}

func TestFastMathReference(t *testing.T) {
	// Every term is >= 0 and exp(0.1 t) >= 1, so the sum is positive and
	// far from 0: relative errors are meaningful.
	for _, x := range []float32{0, 0.25, 0.999} {
		if r := fastRef(x); !(r > 1) {
			t.Errorf("fastRef(%v) = %v", x, r)
		}
	}
}

func TestFastMathNeedsAGPU(t *testing.T) {
	dev, err := engine.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if _, _, err := gpuSuite(fastmathBuild)(dev, "1K"); err == nil {
		t.Error("fastmath ran on the CPU device")
	}
}
