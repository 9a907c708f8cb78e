package sqfd

import (
	"slices"
	"strings"
	"testing"

	"gpulab/datasets"
	"gpulab/engine/cluster/kmedoids"
)

func TestFitStarts(t *testing.T) {
	s, err := datasets.SyntheticSignatures(80, 3, 6, Features, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetric(s, Kernel{Gaussian, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	cfgs := []kmedoids.Config{{K: 4, Seed: 2}, {K: 4, Seed: 1, Init: kmedoids.Random}}
	starts, err := FitStarts(m, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"k-medoids++, seed 2", "random, seed 1"} {
		direct, err := kmedoids.Fit(m, cfgs[i])
		if err != nil {
			t.Fatal(err)
		}
		if starts[i].Name != want || !slices.Equal(starts[i].Result.Medoids, direct.Medoids) {
			t.Errorf("start %d: %q with medoids %v, want %q with %v", i, starts[i].Name, starts[i].Result.Medoids, want, direct.Medoids)
		}
	}
	if _, err := FitStarts(m, []kmedoids.Config{{K: 0}}); err == nil || !strings.Contains(err.Error(), "k-medoids from k-medoids++, seed 0") {
		t.Errorf("K = 0: %v", err)
	}
	if _, err := CostFigure(starts).PNG(0, 0); err != nil {
		t.Error(err)
	}
}

func TestCostMarkdown(t *testing.T) {
	run := func(name string, iters int, history ...float64) Start {
		return Start{name, &kmedoids.Result{Iters: iters, History: history, Cost: history[len(history)-1], Evaluations: 100, Sizes: []int{3, 2}}}
	}
	for _, tc := range []struct {
		name   string
		starts []Start
		want   []string
	}{
		{"same cost", []Start{run("a", 2, 50, 40), run("b", 3, 60, 45, 40.1)}, []string{
			"| a | 2 | 100 | 40.0000 | [3 2] |", "| b | 3 | 100 | 40.1000 | [3 2] |",
			"Every run stopped within 3 iterations", "about the same cost"}},
		{"local minima", []Start{run("a", 2, 50, 40), run("b", 2, 70, 60), run("c", 3, 55, 41, 40)}, []string{
			"differ by up to 50%: b ended at 60.0000, and a at 40.0000",
			"The lowest cost was reached from a and c."}},
	} {
		md, err := CostMarkdown(tc.starts)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(md, w) {
				t.Errorf("%s: %q lacks %q", tc.name, md, w)
			}
		}
	}
	if _, err := CostMarkdown(nil); err == nil {
		t.Error("no runs gave a table")
	}
}
