package lfm2

// How the router spreads a batch's tokens over the experts: the load that
// a one-GEMM-per-expert schedule waits on.

import (
	"fmt"
	"slices"
	"strings"

	"gpulab/engine/plot"
)

// ExpertLoad runs the fixture's batch through the reference and counts,
// for each MoE layer, the tokens routed to each expert (nil for the dense
// layers): ExpertLoadOf the batch.
func (f *Fixture) ExpertLoad() ([][]int, error) { return ExpertLoadOf(f.Config, f.Weights, f.Batch) }

// expertLoadStats is a layer's total, busiest and least busy expert, and mean.
func expertLoadStats(counts []int) (total, busiest, idlest int, mean float64) {
	for _, n := range counts {
		total += n
	}
	return total, slices.Max(counts), slices.Min(counts), float64(total) / float64(len(counts))
}

// ExpertLoadBars charts each MoE layer's tokens per expert, with the mean
// as the reference line: one chart per layer, one bar per expert.
func ExpertLoadBars(load [][]int) []*plot.Figure {
	var out []*plot.Figure
	for l, counts := range load {
		if counts == nil {
			continue
		}
		labels, values := make([]string, len(counts)), make([]float64, len(counts))
		for e, n := range counts {
			labels[e], values[e] = fmt.Sprintf("expert %d", e), float64(n)
		}
		_, busiest, _, mean := expertLoadStats(counts)
		out = append(out, plot.Bars(fmt.Sprintf("layer %d: tokens per expert (busiest %.2f× the mean)", l, float64(busiest)/mean),
			"tokens", labels, values).WithReference(mean, "mean"))
	}
	return out
}

// ExpertLoadMarkdown says, per MoE layer, how uneven the load is, and what
// it costs a schedule that runs every expert side by side on an equal
// share of the GPU: the layer lasts as long as its busiest expert, and the
// other shares idle for 1 − mean/busiest of that time.
func ExpertLoadMarkdown(load [][]int) string {
	var b strings.Builder
	b.WriteString("| layer | tokens × top-k | mean per expert | busiest | least busy | busiest ÷ mean | idle share, one expert per share of the GPU |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	worst, worstLayer := 0.0, -1
	for l, counts := range load {
		if counts == nil {
			continue
		}
		total, busiest, idlest, mean := expertLoadStats(counts)
		idle := 1 - mean/float64(busiest)
		fmt.Fprintf(&b, "| %d | %d | %.1f | %d | %d | %.2f | %.0f%% |\n", l, total, mean, busiest, idlest, float64(busiest)/mean, 100*idle)
		if idle > worst {
			worst, worstLayer = idle, l
		}
	}
	if worstLayer < 0 {
		return b.String() + "\nEvery expert got the same number of tokens in every layer: nothing idles."
	}
	fmt.Fprintf(&b, "\nThe worst is layer %d: run as one GEMM per expert, side by side on equal shares of the GPU, it lasts as long as its busiest expert, and the other shares idle for %.0f%% of that time. Run one after the other, each expert's GEMM gets the whole GPU, but a small one cannot fill it.",
		worstLayer, 100*worst)
	return b.String()
}
