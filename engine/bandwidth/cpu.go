package bandwidth

import (
	"time"

	"gpulab/engine/bench"
)

// cpuCases times the serial Go loop (the baseline) and the goroutine-parallel
// version with the wall clock.
func (o op) cpuCases(p *problem) []bench.Case {
	var cases []bench.Case
	for _, v := range []struct {
		name     string
		baseline bool
		fn       func(out []float32, in [][]float32, alpha float32)
	}{{"go_serial", true, o.serial}, {"go_parallel", false, o.parallel}} {
		out := make([]float32, p.n)
		c := o.base(v.name, p)
		c.Baseline = v.baseline
		c.Reset = func() error { clear(out); return nil }
		c.Run = func() (time.Duration, error) {
			t := time.Now()
			v.fn(out, p.in, o.alpha)
			return time.Since(t), nil
		}
		c.Check = func() (bench.Checked, error) { return bench.Compare(out, p.want), nil }
		cases = append(cases, c)
	}
	return cases
}
