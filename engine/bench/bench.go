// Package bench is gpulab's measurement harness. A Suite turns a device and a
// size into Cases (one per variant); Run warms each case up, times repeated
// runs (GPU events on CUDA and OpenCL, wall clock on the CPU), checks the
// result against a reference, and returns Records with min/median/max time,
// GB/s, GFLOP/s, % of the device's peak and the speedup over the suite's
// baseline measured in the same run.
package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"gpulab/engine"
)

// Params are a case's parameters, e.g. {"bytes": 268435456}. Values are
// numbers or strings so that they survive a JSON round trip.
type Params map[string]any

// Case is one variant of a suite at one size, ready to run.
type Case struct {
	Variant  string
	Params   Params
	Baseline bool // the variant others are compared with
	// CompareWith names the variant this one is compared with instead of the
	// baseline, e.g. a BF16 tensor-core kernel with cuBLAS's BF16 GEMM.
	CompareWith string
	Flops       float64 // floating-point operations per run, counted
	Bytes       float64 // DRAM bytes per run (read + written), counted
	// NoRoof says that no peak of the device bounds the case, so that its
	// records carry no share of one (% roof "-"): its flops are not
	// arithmetic at the rate of the FMA units, and its bytes are not
	// counted (SpGEMM: two flops per product, each product a hash insert).
	NoRoof bool

	// Reset clears the outputs before the runs, so that a variant that does
	// nothing cannot pass the check with a previous variant's result. Optional.
	Reset func() error
	// Run does the work once and returns how long it took on the device.
	Run func() (time.Duration, error)
	// Check compares the output with the reference, usually with Compare;
	// an error is for a failure to check at all (a failed download, say).
	Check func() (Checked, error)
	Tol   float64 // the largest max_rel_err that passes
}

// Suite is a named benchmark, e.g. "copy".
type Suite struct {
	Name string
	Doc  string
	// Sizes is the default size sweep for a device.
	Sizes func(dev engine.Info) []string
	// Cases prepares every variant for one size on dev; close releases what
	// they share.
	Cases func(dev *engine.Device, size string) (cases []Case, close func(), err error)
	// Amend, if set, returns the suite's records as they ran (the same
	// records, in the same order), where some cases ran elsewhere than on
	// dev (the host's CPU, several GPUs), which Run cannot know: it gives
	// every record dev and dev's peaks. Run amends what it measures, and
	// ReadJSON what older records lack.
	Amend func(recs []Record) []Record
}

var (
	registryMu sync.Mutex
	registry   = map[string]Suite{}
)

// Register adds a suite; packages that define suites call it from init.
func Register(s Suite) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[s.Name] = s
}

// Lookup finds a registered suite; an unknown name is an error listing the known ones.
func Lookup(name string) (Suite, error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if s, ok := registry[name]; ok {
		return s, nil
	}
	return Suite{}, fmt.Errorf("bench: unknown suite %q (have: %s)", name, strings.Join(suiteNames(), ", "))
}

// Suites lists the registered suites by name.
func Suites() []Suite {
	registryMu.Lock()
	defer registryMu.Unlock()
	var out []Suite
	for _, n := range suiteNames() {
		out = append(out, registry[n])
	}
	return out
}

func suiteNames() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Options control how cases are timed. A zero field takes its default;
// a negative one is an error (Validate).
type Options struct {
	Warmup   int           // untimed runs first (default 2)
	MinReps  int           // at least this many timed runs (default 5)
	MaxReps  int           // at most this many (default 200, and at least MinReps), even where MinTime is not spent yet
	MinTime  time.Duration // keep repeating until this much device time is spent (default 200ms), or MaxReps runs are done
	Variants []string      // run only these variants (the baseline always runs); empty: all. Run refuses a name the suite does not have
	Progress io.Writer     // progress bar target when it is a terminal; nil: none
}

// Validate returns an error for options that no run can follow: a
// negative warm-up, repetition count or minimum time, or a maximum number
// of repetitions below the minimum. Run and Measure call it.
func (o Options) Validate() error {
	switch {
	case o.Warmup < 0:
		return fmt.Errorf("bench: %d warm-up runs: want 0 or more", o.Warmup)
	case o.MinReps < 0:
		return fmt.Errorf("bench: at least %d timed runs: want 1 or more", o.MinReps)
	case o.MaxReps < 0:
		return fmt.Errorf("bench: at most %d timed runs: want 1 or more", o.MaxReps)
	case o.MaxReps > 0 && o.MaxReps < o.MinReps:
		return fmt.Errorf("bench: at most %d timed runs but at least %d: the maximum is below the minimum", o.MaxReps, o.MinReps)
	case o.MinTime < 0:
		return fmt.Errorf("bench: a minimum time of %v: want a positive duration", o.MinTime)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Warmup <= 0 {
		o.Warmup = 2
	}
	if o.MinReps <= 0 {
		o.MinReps = 5
	}
	if o.MaxReps < o.MinReps {
		o.MaxReps = max(200, o.MinReps)
	}
	if o.MinTime <= 0 {
		o.MinTime = 200 * time.Millisecond
	}
	return o
}

// Record is one measured case.
type Record struct {
	Suite      string `json:"suite"`
	Variant    string `json:"variant"`
	Device     string `json:"device"`
	DeviceName string `json:"device_name"`
	// OnCPU is set where the device computes on the host's CPU cores
	// (engine.Info.OnCPU): the Go backend, or an OpenCL CPU device (PoCL).
	OnCPU         bool    `json:"on_cpu,omitempty"`
	Size          string  `json:"size"`
	Params        Params  `json:"params"`
	Reps          int     `json:"reps"`
	TotalMS       float64 `json:"total_ms,omitempty"` // the timed runs' device time together: at least MinTime, unless MaxReps ended them
	MinMS         float64 `json:"min_ms"`
	MedianMS      float64 `json:"median_ms"`
	MaxMS         float64 `json:"max_ms"`
	GFLOPS        float64 `json:"gflops,omitempty"`
	GBps          float64 `json:"gbps,omitempty"`
	Intensity     float64 `json:"intensity,omitempty"` // FLOP per DRAM byte
	PctPeakGFLOPS float64 `json:"pct_peak_gflops,omitempty"`
	PctPeakGBps   float64 `json:"pct_peak_gbps,omitempty"`
	// InCache is set where a memory-bound run (intensity below the ridge,
	// or no flops) moves bytes that all fit in the device's last-level
	// cache (engine.Info.CacheBytes): repeated runs find them there, so
	// its byte rate is the cache's, not memory's (an effective bandwidth,
	// whatever its share of the memory peak).
	InCache       bool    `json:"in_cache,omitempty"`
	Baseline      string  `json:"baseline,omitempty"`
	Speedup       float64 `json:"speedup,omitempty"`         // baseline median / this median
	PctOfBaseline float64 `json:"pct_of_baseline,omitempty"` // 100 x Speedup: % of the baseline's throughput
	MaxRelErr     float64 `json:"max_rel_err"`
	NonFinite     int     `json:"non_finite,omitempty"` // NaN/Inf values in the output
	OK            bool    `json:"ok"`
	Error         string  `json:"error,omitempty"`
	Commit        string  `json:"commit"`
	Date          string  `json:"date"`
}

// Run measures suite on dev for each size. A case that fails gets a record with
// ok=false and its error; Run itself fails only when a size cannot be set up.
func Run(suite Suite, dev *engine.Device, sizes []string, opt Options) ([]Record, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt = opt.withDefaults()
	if len(sizes) == 0 {
		sizes = suite.Sizes(dev.Info)
	}
	bar := newBar(opt.Progress, len(sizes), suite.Name+" on "+dev.ID)
	var out []Record
	for _, size := range sizes {
		cases, closeFn, err := suite.Cases(dev, size)
		if err == nil {
			err = checkVariants(cases, opt.Variants)
			if err != nil && closeFn != nil {
				closeFn()
			}
		}
		if err != nil {
			return out, fmt.Errorf("bench %s on %s, size %s: %w", suite.Name, dev.ID, size, err)
		}
		var recs []Record
		for _, c := range cases {
			if !c.Baseline && len(opt.Variants) > 0 && !slices.Contains(opt.Variants, c.Variant) && !comparedWith(cases, opt.Variants, c.Variant) {
				continue
			}
			r := Measure(c, opt)
			r.Suite, r.Device, r.DeviceName, r.OnCPU, r.Size = suite.Name, dev.ID, dev.Name, dev.OnCPU(), size
			fillPeaks(&r, c, dev.Info)
			recs = append(recs, r)
		}
		if closeFn != nil {
			closeFn()
		}
		fillSpeedups(recs, cases)
		if suite.Amend != nil {
			recs = suite.Amend(recs)
		}
		out = append(out, recs...)
		if bar != nil {
			bar.Add(1)
		}
	}
	if bar != nil {
		bar.Finish()
	}
	return out, nil
}

// checkVariants returns an error naming the selected variants that are
// not among cases, and listing those that are.
func checkVariants(cases []Case, selected []string) error {
	var have, unknown []string
	for _, c := range cases {
		have = append(have, c.Variant)
	}
	for _, v := range selected {
		if !slices.Contains(have, v) {
			unknown = append(unknown, fmt.Sprintf("%q", v))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	noun := "variant"
	if len(unknown) > 1 {
		noun = "variants"
	}
	return fmt.Errorf("unknown %s %s (have: %s)", noun, strings.Join(unknown, ", "), strings.Join(have, ", "))
}

// comparedWith reports whether a selected variant is compared with v, which
// must then run too.
func comparedWith(cases []Case, selected []string, v string) bool {
	for _, c := range cases {
		if c.CompareWith == v && slices.Contains(selected, c.Variant) {
			return true
		}
	}
	return false
}

func newBar(w io.Writer, n int, desc string) *progressbar.ProgressBar {
	f, ok := w.(*os.File)
	if !ok || n < 2 || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
}

// Measure runs one case: reset, warm-up, timed repetitions, check.
func Measure(c Case, opt Options) Record {
	r := Record{Variant: c.Variant, Params: c.Params, Commit: Commit(), Date: time.Now().UTC().Format(time.RFC3339)}
	fail := func(stage string, err error) Record {
		r.Error = fmt.Sprintf("%s: %v", stage, err)
		return r
	}
	if err := opt.Validate(); err != nil {
		return fail("options", err)
	}
	opt = opt.withDefaults()
	if c.Reset != nil {
		if err := c.Reset(); err != nil {
			return fail("reset", err)
		}
	}
	for range opt.Warmup {
		if _, err := c.Run(); err != nil {
			return fail("run", err)
		}
	}
	var times []time.Duration
	var total time.Duration
	for len(times) < opt.MinReps || (total < opt.MinTime && len(times) < opt.MaxReps) {
		d, err := c.Run()
		if err != nil {
			return fail("run", err)
		}
		times = append(times, d)
		total += d
	}
	slices.Sort(times)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	r.Reps, r.TotalMS = len(times), ms(total)
	r.MinMS, r.MedianMS, r.MaxMS = ms(times[0]), ms(median(times)), ms(times[len(times)-1])
	sec := r.MedianMS / 1e3
	if c.Flops > 0 {
		r.GFLOPS = c.Flops / sec / 1e9
	}
	if c.Bytes > 0 {
		r.GBps = c.Bytes / sec / 1e9
	}
	if c.Flops > 0 && c.Bytes > 0 {
		r.Intensity = c.Flops / c.Bytes
	}
	chk, err := c.Check()
	if err != nil {
		return fail("check", err)
	}
	r.NonFinite = chk.NonFinite
	if math.IsNaN(chk.MaxRelErr) || math.IsInf(chk.MaxRelErr, 0) {
		r.MaxRelErr = math.MaxFloat64 // JSON has no Inf; the error says what happened
		r.Error = fmt.Sprintf("check: element %d is %v where the reference has %v: NaN and Inf must propagate exactly", chk.Worst, chk.Got, chk.Want)
		return r
	}
	r.MaxRelErr = chk.MaxRelErr
	r.OK = chk.MaxRelErr <= c.Tol
	if !r.OK {
		r.Error = fmt.Sprintf("check: max relative error %.3g at element %d (got %v, want %v) exceeds %.3g",
			chk.MaxRelErr, chk.Worst, chk.Got, chk.Want, c.Tol)
	}
	return r
}

func median(s []time.Duration) time.Duration {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func fillPeaks(r *Record, c Case, dev engine.Info) {
	if c.NoRoof {
		return
	}
	precision, _ := r.Params["precision"].(string)
	if peak := dev.PeakFor(precision); r.GFLOPS > 0 && peak > 0 {
		r.PctPeakGFLOPS = 100 * r.GFLOPS / peak
	}
	if r.GBps > 0 && dev.PeakGBps > 0 {
		r.PctPeakGBps = 100 * r.GBps / dev.PeakGBps
	}
	// Only a memory-bound row has a memory roof for the cache to beat: a
	// row whose intensity is past the ridge keeps its compute roof.
	peak := dev.PeakFor(precision)
	memoryBound := c.Flops == 0 || peak == 0 || dev.PeakGBps == 0 || c.Flops/c.Bytes < peak/dev.PeakGBps
	r.InCache = memoryBound && c.Bytes > 0 && dev.CacheBytes > 0 && c.Bytes <= float64(dev.CacheBytes)
}

// fillSpeedups compares every record of one size with its baseline: the
// case's CompareWith variant if set, else the suite's Baseline case.
func fillSpeedups(recs []Record, cases []Case) {
	byVariant := map[string]int{}
	for i, r := range recs {
		if r.Error == "" {
			byVariant[r.Variant] = i
		}
	}
	base := ""
	compareWith := map[string]string{}
	for _, c := range cases {
		if c.Baseline {
			base = c.Variant
		}
		compareWith[c.Variant] = c.CompareWith
	}
	for i := range recs {
		ref := base
		if cw := compareWith[recs[i].Variant]; cw != "" {
			ref = cw
		}
		j, ok := byVariant[ref]
		if !ok || recs[i].Error != "" || recs[i].MedianMS <= 0 {
			continue
		}
		recs[i].Baseline = ref
		recs[i].Speedup = recs[j].MedianMS / recs[i].MedianMS
		recs[i].PctOfBaseline = 100 * recs[i].Speedup
	}
}

// ErrFailed is returned by Failed when a record did not pass.
var ErrFailed = errors.New("bench: some cases failed")

// Failed returns an error naming every record that did not pass, or nil.
func Failed(recs []Record) error {
	var bad []string
	for _, r := range recs {
		if !r.OK {
			bad = append(bad, fmt.Sprintf("%s/%s size %s: %s", r.Suite, r.Variant, r.Size, r.Error))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w:\n  %s", ErrFailed, strings.Join(bad, "\n  "))
}
