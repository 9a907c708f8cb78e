package sqfd

import (
	"fmt"
	"slices"
	"strings"

	"gpulab/engine/cluster/kmedoids"
	"gpulab/engine/plot"
)

// k-medoids from several starts, as notebook 05 compares them: the cost
// can only go down from one iteration to the next, but where it stops, a
// local minimum, depends on the initial medoids.

// A Start is one k-medoids run, named after its initialization.
type Start struct {
	Name   string // e.g. "k-medoids++, seed 2"
	Result *kmedoids.Result
}

// FitStarts runs k-medoids on the CPU once per configuration.
func FitStarts(m kmedoids.Metric, cfgs []kmedoids.Config) ([]Start, error) {
	var starts []Start
	for _, cfg := range cfgs {
		name := fmt.Sprintf("%v, seed %d", cfg.Init, cfg.Seed)
		r, err := kmedoids.Fit(m, cfg)
		if err != nil {
			return nil, fmt.Errorf("sqfd: k-medoids from %s: %w", name, err)
		}
		starts = append(starts, Start{name, r})
	}
	return starts, nil
}

// CostFigure plots each run's cost, the sum of the distances to the
// medoids, after each assignment.
func CostFigure(starts []Start) *plot.Figure {
	var series []plot.Series
	for _, s := range starts {
		line := plot.Series{Name: s.Name}
		for i, c := range s.Result.History {
			line.X, line.Y = append(line.X, float64(i)), append(line.Y, c)
		}
		series = append(series, line)
	}
	return plot.Lines("k-medoids cost after each assignment", "assignment", "sum of SQFD to the medoids", series...)
}

// CostMarkdown is a table of the runs (iterations, distances evaluated,
// final cost, cluster sizes), then what it shows: how far apart the final
// costs are, and which start found the lowest.
func CostMarkdown(starts []Start) (string, error) {
	if len(starts) == 0 {
		return "", fmt.Errorf("sqfd: no k-medoids runs to compare")
	}
	var b strings.Builder
	b.WriteString("| start | iterations | SQFD evaluations | final cost | cluster sizes |\n|---|---:|---:|---:|---|\n")
	best, worst := starts[0], starts[0]
	maxIters := 0
	for _, s := range starts {
		r := s.Result
		fmt.Fprintf(&b, "| %s | %d | %d | %.4f | %v |\n", s.Name, r.Iters, r.Evaluations, r.Cost, r.Sizes)
		if r.Cost < best.Result.Cost {
			best = s
		}
		if r.Cost > worst.Result.Cost {
			worst = s
		}
		maxIters = max(maxIters, r.Iters)
	}
	fmt.Fprintf(&b, "\nEvery run stopped within %d iterations, when an update left the medoids as they were. ", maxIters)
	gap := worst.Result.Cost/best.Result.Cost - 1
	if gap < 0.01 {
		b.WriteString("All of them reached about the same cost: here the start did not matter.")
		return b.String(), nil
	}
	var atBest []string
	for _, s := range starts {
		if s.Result.Cost <= best.Result.Cost*1.001 {
			atBest = append(atBest, s.Name)
		}
	}
	fmt.Fprintf(&b, "Their final costs differ by up to %.0f%%: %s ended at %.4f, and %s at %.4f. "+
		"Neither pass can raise the cost, so each run stops in a local minimum that its start chose. The lowest cost was reached from %s.",
		100*gap, worst.Name, worst.Result.Cost, best.Name, best.Result.Cost, strings.Join(slices.Compact(atBest), " and "))
	return b.String(), nil
}
