package bench

import (
	"strings"
	"testing"
	"time"

	"gpulab/engine"
)

// TestOptionsValidate: zero fields are defaults; negative ones, and a
// maximum below the minimum, are errors from Run and Measure alike, before
// anything runs.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		opt  Options
		want string // "" for valid
	}{
		{Options{}, ""},
		{Options{Warmup: 0, MinReps: 1, MaxReps: 1, MinTime: time.Nanosecond}, ""},
		{Options{MinReps: 300}, ""}, // the default maximum grows to the minimum
		{Options{Warmup: -1}, "-1 warm-up runs: want 0 or more"},
		{Options{MinReps: -1}, "at least -1 timed runs: want 1 or more"},
		{Options{MaxReps: -5}, "at most -5 timed runs"},
		{Options{MinReps: 10, MaxReps: 3}, "at most 3 timed runs but at least 10"},
		{Options{MinTime: -time.Second}, "a minimum time of -1s: want a positive duration"},
	} {
		err := tc.opt.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opt, err, tc.want)
			continue
		}
		runs := 0
		c := fakeCase("a", time.Millisecond, 0, true)
		c.Run = func() (time.Duration, error) { runs++; return time.Millisecond, nil }
		suite := Suite{Name: "fake", Cases: func(*engine.Device, string) ([]Case, func(), error) { return []Case{c}, nil, nil }}
		dev := &engine.Device{Info: engine.Info{ID: "cpu"}}
		if _, err := Run(suite, dev, []string{"1"}, tc.opt); (err == nil) != (tc.want == "") {
			t.Errorf("%+v: Run: %v", tc.opt, err)
		}
		if r := Measure(c, tc.opt); tc.want != "" && (r.OK || !strings.Contains(r.Error, "options: ") || !strings.Contains(r.Error, tc.want)) {
			t.Errorf("%+v: Measure: %+v", tc.opt, r)
		}
		if tc.want != "" && runs != 0 {
			t.Errorf("%+v: ran %d times with invalid options", tc.opt, runs)
		}
	}
}

// TestRunRefusesUnknownVariants: a selected variant the suite does not
// have is an error listing those it has, and nothing is measured; the
// shared resources are released.
func TestRunRefusesUnknownVariants(t *testing.T) {
	closed, ran := 0, 0
	suite := Suite{Name: "fake", Cases: func(*engine.Device, string) ([]Case, func(), error) {
		var cs []Case
		for _, v := range []string{"base", "fast", "slow"} {
			c := fakeCase(v, time.Millisecond, 0, v == "base")
			c.Run = func() (time.Duration, error) { ran++; return time.Millisecond, nil }
			cs = append(cs, c)
		}
		return cs, func() { closed++ }, nil
	}}
	dev := &engine.Device{Info: engine.Info{ID: "cpu"}}
	for _, tc := range []struct {
		variants []string
		want     string
	}{
		{[]string{"nosuch"}, `bench fake on cpu, size 1: unknown variant "nosuch" (have: base, fast, slow)`},
		{[]string{"fast", "x", "y"}, `unknown variants "x", "y" (have: base, fast, slow)`},
	} {
		recs, err := Run(suite, dev, []string{"1", "2"}, Options{Variants: tc.variants, MinTime: time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), tc.want) || len(recs) != 0 {
			t.Errorf("%v: %d records, %v; want %q", tc.variants, len(recs), err, tc.want)
		}
	}
	if ran != 0 || closed != 2 {
		t.Errorf("ran %d cases and closed %d sizes; want 0 and 2", ran, closed)
	}
	if recs, err := Run(suite, dev, []string{"1"}, Options{Variants: []string{"fast"}, MinTime: time.Millisecond}); err != nil || len(recs) != 2 {
		t.Errorf("a known variant: %d records, %v", len(recs), err)
	}
}
