package lfm2

// The reduction at the heart of RMSNorm (and of every dot product of the
// CUDA engine): warp_sum in kernels/cuda/lfm2/common.cuh, simulated lane by
// lane.

import (
	"fmt"
	"math"
	"strings"
)

// WarpSize is the lanes of a warp.
const WarpSize = 32

// WarpXorSum simulates warp_sum on the 32 values its lanes hold: in each of
// five rounds, with offsets 16, 8, 4, 2, 1, every lane adds the value that
// lane^offset holds (__shfl_xor_sync reads it from that lane's register:
// no shared memory, no barrier). It returns the lanes after each round,
// rounds[0] being the input; after the last one every lane holds the sum of
// all 32, added in the same order, so the same value in every lane.
func WarpXorSum(lanes [WarpSize]float32) [][WarpSize]float32 {
	rounds := [][WarpSize]float32{lanes}
	for offset := WarpSize / 2; offset > 0; offset /= 2 {
		prev, next := rounds[len(rounds)-1], [WarpSize]float32{}
		for i := range next {
			next[i] = prev[i] + prev[i^offset]
		}
		rounds = append(rounds, next)
	}
	return rounds
}

// LaneSquares is what each lane of one warp adds up before warp_sum in
// kernel 02 (RMSNorm): the squares of its strided share of the row, lane i
// taking elements i, i+32, i+64, ...
func LaneSquares(row []float32) [WarpSize]float32 {
	var lanes [WarpSize]float32
	for i, v := range row {
		lanes[i%WarpSize] += v * v
	}
	return lanes
}

// WarpSumMarkdown tells the reduction of row's sum of squares, round by
// round: what lane 0 holds, how many lanes' shares it has, how many
// different values the 32 lanes hold; then the sum against one added in
// float64, and the RMSNorm scale it gives.
func WarpSumMarkdown(row []float32, eps float64) string {
	rounds := WarpXorSum(LaneSquares(row))
	var b strings.Builder
	b.WriteString("| round | shuffle | lane 0 holds | shares in it | different values over the 32 lanes |\n|---:|---|---:|---:|---:|\n")
	for r, lanes := range rounds {
		distinct := map[float32]bool{}
		for _, v := range lanes {
			distinct[v] = true
		}
		shuffle := "(each lane's own share)"
		if r > 0 {
			shuffle = fmt.Sprintf("`v += __shfl_xor_sync(mask, v, %d)`", WarpSize>>r)
		}
		fmt.Fprintf(&b, "| %d | %s | %.6g | %d | %d |\n", r, shuffle, lanes[0], 1<<r, len(distinct))
	}
	var exact float64
	for _, v := range row {
		exact += float64(v) * float64(v)
	}
	sum := rounds[len(rounds)-1][0]
	fmt.Fprintf(&b, "\nAfter %d rounds every lane holds Σx² = %.7g over the row's %d values; added in float64 it is %.7g, a relative difference of %.1e, fp32 rounding. ",
		len(rounds)-1, sum, len(row), exact, math.Abs(float64(sum)-exact)/exact)
	fmt.Fprintf(&b, "Each lane then scales its share of the row by 1/√(Σx²/%d + ε) = %.6g. ", len(row), 1/math.Sqrt(float64(sum)/float64(len(row))+eps))
	fmt.Fprintf(&b, "The butterfly takes log₂ %d = %d rounds, with no shared memory and no barrier; thread 0 adding a block's partial sums from shared memory one by one, as the log's first version did, makes n − 1 dependent additions for n threads, after a barrier.",
		WarpSize, len(rounds)-1)
	return b.String()
}
