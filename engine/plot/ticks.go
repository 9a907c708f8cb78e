package plot

import (
	"math"
	"slices"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
)

// formatValue renders v with about three significant digits and no exponent
// for ordinary magnitudes: 3.2, 12.5, 0.0123, 1234, 51200, 1.23e+08.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == 0:
		return "0"
	}
	a := math.Abs(v)
	if a >= 1e7 || a < 1e-4 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	mag := int(math.Floor(math.Log10(a)))
	dec := 2 - mag // three significant digits
	if dec < 0 {
		dec = 0
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	// Rounding can carry into a new digit (9.996 -> "10.00"); trimming below fixes the look.
	return trimZeros(s)
}

// trimZeros removes trailing zeros after a decimal point ("2.50" -> "2.5", "3.00" -> "3").
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// formatTick renders an axis tick value compactly: plain numbers below 10 000,
// SI suffixes above (10k, 2.5M, 1G), exponents for tiny values.
func formatTick(v float64) string {
	if v == 0 {
		return "0"
	}
	a := math.Abs(v)
	if a < 1e-3 {
		return expForm(v)
	}
	if a < 1e4 {
		return trimZeros(strconv.FormatFloat(v, 'f', 6, 64))
	}
	suffixes := []struct {
		div float64
		sfx string
	}{{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}
	for _, s := range suffixes {
		if a >= s.div {
			if a >= 1e18 {
				break
			}
			return trimZeros(strconv.FormatFloat(v/s.div, 'f', 2, 64)) + s.sfx
		}
	}
	return expForm(v)
}

// expForm renders v as a short exponent form: 1e-4, 2.5e-5, 1e20.
func expForm(v float64) string {
	s := strconv.FormatFloat(v, 'e', 1, 64)
	i := strings.IndexByte(s, 'e')
	return trimExp(trimZeros(s[:i]) + s[i:])
}

// trimExp shortens Go's exponent form: "1e-05" -> "1e-5", "1e+20" -> "1e20".
func trimExp(s string) string {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return s
	}
	mant, exp := s[:i], s[i+1:]
	sign := ""
	if exp != "" && (exp[0] == '+' || exp[0] == '-') {
		if exp[0] == '-' {
			sign = "-"
		}
		exp = exp[1:]
	}
	exp = strings.TrimLeft(exp, "0")
	if exp == "" {
		exp = "0"
	}
	return mant + "e" + sign + exp
}

// niceStep returns a "nice" tick step (1, 2, 2.5 or 5 times a power of ten)
// close to span/target.
func niceStep(span float64, target int) float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(target)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	f := raw / mag
	var nice float64
	switch {
	case f <= 1:
		nice = 1
	case f <= 2:
		nice = 2
	case f <= 2.5:
		nice = 2.5
	case f <= 5:
		nice = 5
	default:
		nice = 10
	}
	return nice * mag
}

// niceRange widens [lo, hi] outward to multiples of a nice step so that the
// first and last grid lines sit on the plot frame.
func niceRange(lo, hi float64, target int) (float64, float64) {
	if hi < lo {
		lo, hi = hi, lo
	}
	if hi == lo {
		if lo == 0 {
			return 0, 1
		}
		d := math.Abs(lo) * 0.1
		lo, hi = lo-d, hi+d
	}
	step := niceStep(hi-lo, target)
	return math.Floor(lo/step+1e-9) * step, math.Ceil(hi/step-1e-9) * step
}

// linearTicks is a plot.Ticker with about six labelled ticks and unlabelled
// minor ticks between them.
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []gplot.Tick{{Value: lo, Label: formatTick(lo)}}
	}
	step := niceStep(hi-lo, 6)
	first := math.Ceil(lo/step-1e-9) * step
	var ticks []gplot.Tick
	for i := 0; i < 1000; i++ {
		v := first + float64(i)*step
		if v > hi+step*1e-9 {
			break
		}
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, gplot.Tick{Value: v, Label: formatTick(v)})
		if m := v + step/2; m < hi {
			ticks = append(ticks, gplot.Tick{Value: m})
		}
	}
	if m := first - step/2; m > lo {
		ticks = append(ticks, gplot.Tick{Value: m})
	}
	return ticks
}

// logTicks is a plot.Ticker for logarithmic axes: labels at every decade
// (every other or third decade on very wide ranges) and, on narrow ranges, at
// 2x and 5x as well; unlabelled minor ticks at the integer multiples.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		if lo > 0 && !math.IsInf(lo, 0) {
			return []gplot.Tick{{Value: lo, Label: formatTick(lo)}}
		}
		return nil
	}
	d0 := int(math.Floor(math.Log10(lo)))
	d1 := int(math.Ceil(math.Log10(hi)))
	decades := d1 - d0
	every := 1
	switch {
	case decades > 14:
		every = 3
	case decades > 8:
		every = 2
	}
	fine := math.Log10(hi/lo) < 2.5
	var ticks []gplot.Tick
	for d := d0; d <= d1; d++ {
		base := math.Pow(10, float64(d))
		for m := 1; m < 10; m++ {
			v := base * float64(m)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := gplot.Tick{Value: v}
			if (m == 1 && (d-d0)%every == 0) || (fine && (m == 2 || m == 5)) {
				t.Label = formatTick(v)
			}
			ticks = append(ticks, t)
		}
	}
	labelled := 0
	for _, t := range ticks {
		if t.Label != "" {
			labelled++
		}
	}
	if labelled < 2 {
		// A very narrow range: label the ends so the axis still reads.
		ticks = append(ticks,
			gplot.Tick{Value: lo, Label: formatTick(sig2(lo))},
			gplot.Tick{Value: hi, Label: formatTick(sig2(hi))})
	}
	return ticks
}

// sig2 rounds v to two significant digits.
func sig2(v float64) float64 {
	f, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 2, 64), 64)
	if err != nil {
		return v
	}
	return f
}

// logRange widens [lo, hi] (both > 0) by the factor pad on both sides.
func logRange(lo, hi, pad float64) (float64, float64) {
	if hi < lo {
		lo, hi = hi, lo
	}
	if hi == lo {
		return lo / 2, hi * 2
	}
	return lo / pad, hi * pad
}

// maxDataTicks is the most ticks XTicksAtData labels.
const maxDataTicks = 12

// dataTicks is a tick, labelled, at each distinct x value of series, in
// increasing order; more than maxDataTicks values are thinned to every
// k-th, keeping the first.
func dataTicks(series []Series) gplot.ConstantTicks {
	var xs []float64
	for _, s := range series {
		xs = append(xs, s.X...)
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	every := (len(xs) + maxDataTicks - 1) / maxDataTicks
	var ticks gplot.ConstantTicks
	for i, x := range xs {
		if i%every == 0 {
			ticks = append(ticks, gplot.Tick{Value: x, Label: formatTick(x)})
		}
	}
	return ticks
}
