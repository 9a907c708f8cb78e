package sparse

import (
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// binnedStats is a binned step's phases, with the given dense times.
func binnedStats(step string, symbolicDense, numericDense time.Duration) GPUStats {
	phases := []Phase{
		{"products and bins", 100, ms / 2},
		{"symbolic: hash 64 slots, 32 threads", 60, ms},
		{"symbolic: dense", 40, symbolicDense},
		{"scan and allocate C", 100, ms / 4},
		{"numeric: hash 64 slots, 32 threads", 60, 2 * ms},
		{"numeric: dense windows", 40, numericDense},
	}
	s := GPUStats{Step: step, Phases: phases, PeakBytes: 3 << 30}
	for _, p := range phases {
		s.Total += p.Time
	}
	return s
}

func TestPhaseGroup(t *testing.T) {
	for name, want := range map[string]string{
		"products and bins":                               "setup",
		"scan and allocate C":                             "setup",
		"transpose A":                                     "setup",
		"symbolic: hash 512 slots, 128 threads":           "symbolic, hash",
		"symbolic: dense":                                 "symbolic, dense",
		"symbolic (dense)":                                "symbolic, dense",
		"numeric: dense windows":                          "numeric, dense",
		"compress: hash 512 slots, 128 threads":           "numeric, hash",
		"numeric: hash bins alongside the dense windows":  "numeric, hash + dense",
		"symbolic: hash bins alongside the dense windows": "symbolic, hash + dense",
	} {
		if got := phaseGroup(name); got != want {
			t.Errorf("phaseGroup(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestPhasesMarkdown(t *testing.T) {
	cu := GPUStats{Step: "cusparse", Phases: []Phase{{"cusparseSpGEMM", 100, 20 * ms}}, Total: 20 * ms, PeakBytes: 20 << 30}
	stats := []GPUStats{cu, binnedStats("04_binned", 4*ms, 8*ms), binnedStats("06_balanced", 2*ms, 6*ms)}
	md := PhasesMarkdown("*Recorded on a GPU:*", stats)
	for _, want := range []string{
		"*Recorded on a GPU:*\n\n| phase | rows | cusparse | 04_binned | 06_balanced |",
		"| cusparseSpGEMM | 100 | 20.0 ms | - | - |",
		"| numeric: dense windows | 40 | - | 8.00 ms | 6.00 ms |",
		"| **total** | | **20.0 ms** | **15.8 ms** | **11.8 ms** |",
		"| peak memory | | 20.0 GiB | 3072 MiB | 3072 MiB |",
		"- **04_binned:** its longest phase, *numeric: dense windows* (40 rows), takes 8.00 ms of 15.8 ms, 51%.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "**cusparse:**") {
		t.Errorf("names the longest of a single phase:\n%s", md)
	}

	change := PhaseChangeMarkdown("step 04", stats[1], "step 06", stats[2])
	if want := "From step 04 to step 06: setup 750 µs → 750 µs; symbolic, hash 1.00 ms → 1.00 ms; symbolic, dense 4.00 ms → 2.00 ms; numeric, hash 2.00 ms → 2.00 ms; numeric, dense 8.00 ms → 6.00 ms. In all, 15.8 ms → 11.8 ms (25% faster).\n"; change != want {
		t.Errorf("PhaseChangeMarkdown =\n%q, want\n%q", change, want)
	}
	together := GPUStats{Step: "06_balanced", Phases: []Phase{{"products and bins", 100, ms / 2}, {"numeric: hash bins alongside the dense windows", 100, 9 * ms}}, Total: 9*ms + ms/2}
	change = PhaseChangeMarkdown("apart", stats[2], "alongside", together)
	for _, want := range []string{"setup 750 µs → 500 µs; symbolic (hash, dense) 3.00 ms → (none); numeric (hash, dense) 8.00 ms → (hash + dense) 9.00 ms.", "11.8 ms → 9.50 ms (19% faster)"} {
		if !strings.Contains(change, want) {
			t.Errorf("lacks %q:\n%s", want, change)
		}
	}

	html, err := PhaseFigure(stats[1], "step 04, recorded").HTML()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"step 04, recorded: GPU time by phase", "symbolic, dense", "numeric, hash"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the figure lacks %q", want)
		}
	}
	if s, err := StepStats(stats, "06_balanced"); err != nil || s.Total != stats[2].Total {
		t.Errorf("StepStats: %v", err)
	}
	if _, err := StepStats(stats, "05_outer_product"); err == nil || !strings.Contains(err.Error(), "cusparse, 04_binned, 06_balanced") {
		t.Errorf("StepStats of a missing step: %v", err)
	}
}
