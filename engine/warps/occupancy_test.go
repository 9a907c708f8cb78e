package warps

import (
	"slices"
	"testing"

	"gpulab/engine"
	"gpulab/engine/bench"
)

func TestOccupancySmemsFitting(t *testing.T) {
	for _, tc := range []struct {
		limit int
		want  []int
	}{
		{48 << 10, []int{0, 16 << 10, 32 << 10, 48 << 10}},
		{227 << 10, occupancySmems},
		{32 << 10, []int{0, 16 << 10, 32 << 10}},
		{0, []int{0}},
	} {
		if got := occupancySmemsFitting(tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("limit %d: %v, want %v", tc.limit, got, tc.want)
		}
	}
}

func TestOccupancyCPUErrors(t *testing.T) { rejectsCPU(t, "occupancy") }

func TestOccupancyVariants(t *testing.T) {
	s, err := bench.Lookup("occupancy")
	if err != nil {
		t.Fatal(err)
	}
	eachGPU(t, func(t *testing.T, dev *engine.Device, g *gpu) {
		cases, closeFn, err := s.Cases(dev, "64K")
		if err != nil {
			t.Fatal(err)
		}
		defer closeFn()
		if len(cases) == 0 || !cases[0].Baseline || cases[0].Variant != "acc1_smem0K" {
			t.Fatalf("want the baseline acc1_smem0K first, got %d cases", len(cases))
		}
		accs := map[int]bool{}
		for _, c := range cases {
			accs[c.Params["acc"].(int)] = true
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
				switch dev.Kind {
				case engine.CUDA:
					for _, k := range []string{"regs", "smem", "blocks_per_sm", "occupancy"} {
						if _, ok := c.Params[k]; !ok {
							t.Errorf("param %s missing", k)
						}
					}
					if o := c.Params["occupancy"].(float64); o <= 0 || o > 1 {
						t.Errorf("occupancy %v", o)
					}
				case engine.OpenCL:
					if _, ok := c.Params["occupancy"]; ok {
						t.Error("OpenCL has no occupancy query: the param should be omitted")
					}
					for _, k := range []string{"local_mem", "kernel_local_mem", "kernel_private_mem"} {
						if _, ok := c.Params[k]; !ok {
							t.Errorf("param %s missing", k)
						}
					}
				}
			})
		}
		for _, a := range occupancyAccs {
			if !accs[a] {
				t.Errorf("no variant with ACC=%d", a)
			}
		}
	})
}
