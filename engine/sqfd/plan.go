package sqfd

import (
	"fmt"
	"math"
	"sort"
)

// How the GPU work of an iteration is split, on the host, from O(K) numbers
// that the GPU computed (kernels/cuda/kmedoids/03_clusters.cu). Every shard
// computes the same plan from its own copy of the same numbers, so a
// multi-process backend needs no extra message to agree on it.

// evenShare is rank's part [lo, hi) of units split as evenly as integers
// allow: the assignment's tiles, which all hold about the same number of
// centroids and so cost the same.
func evenShare(units, rank, ranks int) (lo, hi int) {
	return units * rank / ranks, units * (rank + 1) / ranks
}

// workShare is rank's range [lo, hi) of tiles, given the exclusive prefix
// sums of their work (prefix[b] is the work of the tiles before b; the last
// entry is the total): each boundary is the tile boundary nearest to its
// share of the total. Consecutive ranks' ranges meet, and together they
// cover every tile.
func workShare(prefix []int64, rank, ranks int) (lo, hi int) {
	tiles := len(prefix) - 1
	bound := func(r int) int {
		if r == ranks {
			return tiles // with any empty tiles at the end
		}
		total := prefix[tiles]
		target := total/int64(ranks)*int64(r) + total%int64(ranks)*int64(r)/int64(ranks)
		b := sort.Search(tiles+1, func(b int) bool { return prefix[b] >= target })
		if b > 0 && target-prefix[b-1] < prefix[b]-target {
			b--
		}
		return b
	}
	return bound(rank), bound(rank + 1)
}

// clusterInfo is what the host reads back from the cluster preprocessing:
// offsets (clusterListIndex, K+1), centroids per cluster, and the first and
// last tile of each cluster's rows (-1 when it is empty). It is the layout
// of the device buffer, so one copy brings it back.
type clusterInfo struct {
	offsets, centroids, first, last []int32
}

// infoLen is the int32s of a clusterInfo for K clusters.
func infoLen(k int) int { return 4*k + 1 }

// splitInfo views raw (infoLen(k) values) as a clusterInfo.
func splitInfo(raw []int32, k int) clusterInfo {
	return clusterInfo{offsets: raw[:k+1], centroids: raw[k+1 : 2*k+1], first: raw[2*k+1 : 3*k+1], last: raw[3*k+1 : 4*k+1]}
}

// big reports whether cluster c is big: its work, centroids squared, is at
// least the cut-off.
func (ci clusterInfo) big(c int, cutoff int64) bool {
	n := int64(ci.centroids[c])
	return n*n >= cutoff
}

// evaluations is the number of distances a score pass evaluates: Σ |C|².
func (ci clusterInfo) evaluations() int64 {
	var e int64
	for c := range len(ci.offsets) - 1 {
		n := int64(ci.offsets[c+1] - ci.offsets[c])
		e += n * n
	}
	return e
}

// bigWork is the score_big launch of one shard: entry e is cluster
// cluster[e] from its tile tile[e] on, and owns the blocks item[e] ..
// item[e+1]-1; a block is one (tile, chunk of targets) pair. item has one
// more entry than cluster, the total.
type bigWork struct {
	item, cluster, tile []int32
}

// planBig lists the big clusters' work in tiles [b0, b1), chunk targets per
// block.
func planBig(ci clusterInfo, cutoff int64, b0, b1, chunk int) (bigWork, error) {
	w := bigWork{item: []int32{0}}
	total := int64(0)
	for c := range len(ci.centroids) {
		if ci.first[c] < 0 || !ci.big(c, cutoff) {
			continue
		}
		lo, hi := max(int(ci.first[c]), b0), min(int(ci.last[c]), b1-1)
		if lo > hi {
			continue
		}
		members := int64(ci.offsets[c+1] - ci.offsets[c])
		total += int64(hi-lo+1) * ((members + int64(chunk) - 1) / int64(chunk))
		if total > math.MaxInt32 {
			return bigWork{}, fmt.Errorf("sqfd: the big clusters' score work needs more than %d blocks; raise the cut-off or add GPUs", math.MaxInt32)
		}
		w.cluster, w.tile = append(w.cluster, int32(c)), append(w.tile, int32(lo))
		w.item = append(w.item, int32(total))
	}
	return w, nil
}

// items is the number of blocks of the launch.
func (w bigWork) items() int { return int(w.item[len(w.item)-1]) }
