package sparse

import (
	"fmt"
	"time"

	"gpulab/engine/cuda"
)

// Profile multiplies a·b on ctx with cuSPARSE and each of steps (nil: all of
// GPUSteps), with the given GPUSpGEMM.Window (0: the default), each once to compile and fill the memory pool and once more to
// measure, and returns the measured runs' stats. cuSPARSE's entry has a single
// phase. Every result is checked against CPU Gustavson first.
func Profile(ctx *cuda.Context, a, b *CSR, steps []string, window int) (out []GPUStats, err error) {
	if steps == nil {
		steps = GPUSteps
	}
	want, err := GustavsonParallel(a, b)
	if err != nil {
		return nil, err
	}
	da, err := UploadCSR(ctx, a)
	if err != nil {
		return nil, err
	}
	defer da.Free()
	db, err := UploadCSR(ctx, b)
	if err != nil {
		return nil, err
	}
	defer db.Free()
	g := NewGPUSpGEMM(ctx)
	g.Window = window
	defer g.Close()
	sp, err := ctx.NewSparse(nil)
	if err != nil {
		return nil, err
	}
	defer sp.Destroy()
	timer, err := ctx.NewTimer(nil)
	if err != nil {
		return nil, err
	}
	defer timer.Destroy()
	checked := func(name string, c cuda.CSR) error {
		defer g.Release(c)
		got, err := DownloadCSR(c)
		if err != nil {
			return err
		}
		if r := sameStructure(got, want); !(r.MaxRelErr <= spgemmTolerance(a, b)) {
			return fmt.Errorf("sparse: %s: result differs from CPU Gustavson (max rel err %g)", name, r.MaxRelErr)
		}
		return nil
	}
	for _, step := range append([]string{"cusparse"}, steps...) {
		var s GPUStats
		for range 2 {
			var c cuda.CSR
			if step == "cusparse" {
				var peak int
				var d time.Duration
				d, err = timer.Time(func() error {
					var err error
					c, peak, err = g.CuSPARSE(sp, da, db)
					return err
				})
				s = GPUStats{Step: step, Total: d, PeakBytes: peak, Phases: []Phase{{Name: "cusparseSpGEMM", Rows: a.Rows, Time: d}}}
			} else {
				c, s, err = g.Multiply(step, da, db)
			}
			if err != nil {
				return nil, err
			}
			if err := checked(step, c); err != nil {
				return nil, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}
