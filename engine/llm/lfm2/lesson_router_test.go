package lfm2

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFixtureExpertLoad: each MoE layer of the fixture routes every token
// of the batch to top-k experts; the dense layers have no load.
func TestFixtureExpertLoad(t *testing.T) {
	f := fixture(t, "moe")
	load, err := f.ExpertLoad()
	if err != nil {
		t.Fatal(err)
	}
	for l, counts := range load {
		if !f.Config.IsMoE(l) {
			if counts != nil {
				t.Errorf("dense layer %d has a load %v", l, counts)
			}
			continue
		}
		total, _, _, _ := expertLoadStats(counts)
		if want := len(f.Batch) * f.Seq() * f.Config.ExpertsPerToken; total != want || len(counts) != f.Config.Experts {
			t.Errorf("layer %d: %v, %d routings, want %d over %d experts", l, counts, total, want, f.Config.Experts)
		}
	}
	figs := ExpertLoadBars(load)
	if len(figs) != 3 || !strings.HasPrefix(figs[0].Title, "layer 2: tokens per expert") {
		t.Errorf("%d charts", len(figs))
	}
	if err := figs[0].Save(filepath.Join(t.TempDir(), "load.png")); err != nil {
		t.Error(err)
	}
}

func TestExpertLoadMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		load [][]int
		want []string
	}{
		{"even", [][]int{nil, {2, 2, 2}}, []string{"| 1 | 6 | 2.0 | 2 | 2 | 1.00 | 0% |", "nothing idles"}},
		{"skewed", [][]int{{4, 0, 2, 2}, {3, 1, 2, 2}}, []string{"| 0 | 8 | 2.0 | 4 | 0 | 2.00 | 50% |", "| 1 | 8 | 2.0 | 3 | 1 | 1.50 | 33% |", "The worst is layer 0", "idle for 50% of that time"}},
	} {
		md := ExpertLoadMarkdown(tc.load)
		for _, want := range tc.want {
			if !strings.Contains(md, want) {
				t.Errorf("%s: lacks %q:\n%s", tc.name, want, md)
			}
		}
	}
}
