package warps

import (
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
)

func TestBanksWays(t *testing.T) {
	for _, tc := range []struct{ s, p, ways int }{
		{32, 0, 32}, {32, 1, 1}, {1, 0, 1}, {2, 0, 2}, {4, 0, 4}, {16, 0, 16},
		{32, 4, 4}, {16, 4, 4}, {16, 1, 1}, {8, 8, 16}, {32, 8, 8}, {1, 1, 2},
	} {
		if got := banksWays(tc.s, tc.p); got != tc.ways {
			t.Errorf("stride %d pad %d: %d-way, want %d-way", tc.s, tc.p, got, tc.ways)
		}
	}
}

func TestBanksCPUErrors(t *testing.T) { rejectsCPU(t, "banks") }

func TestBanksVariants(t *testing.T) {
	s, err := bench.Lookup("banks")
	if err != nil {
		t.Fatal(err)
	}
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		cases, closeFn, err := s.Cases(dev, "4K")
		if err != nil {
			t.Fatal(err)
		}
		defer closeFn()
		seen := map[string]bool{}
		for _, c := range cases {
			seen[c.Variant] = true
			t.Run(c.Variant, func(t *testing.T) {
				if err := c.Reset(); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Run(); err != nil {
					t.Fatal(err)
				}
				chk, err := c.Check()
				if err != nil {
					t.Fatal(err)
				}
				if chk.MaxRelErr > c.Tol {
					t.Errorf("max rel err %g at %d (got %v, want %v)", chk.MaxRelErr, chk.Worst, chk.Got, chk.Want)
				}
				if w := c.Params["ways"]; w != banksWays(c.Params["stride"].(int), c.Params["pad"].(int)) {
					t.Errorf("ways %v", w)
				}
			})
		}
		// Every variant whose tile fits is there; those that do not are skipped.
		for _, st := range banksStrides {
			for _, p := range banksPads {
				if v := banksVariant(st, p); !seen[v] && 4*banksBlock*(st+p) <= 48<<10 {
					t.Errorf("variant %s (tile %d bytes) missing", v, 4*banksBlock*(st+p))
				}
			}
		}
		if !seen["s1_p0"] || !cases[0].Baseline {
			t.Error("the baseline s1_p0 should come first")
		}
	})
}
