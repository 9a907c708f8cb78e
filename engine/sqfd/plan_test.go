package sqfd

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestEvenShare(t *testing.T) {
	for _, tc := range []struct {
		units, ranks int
		want         [][2]int
	}{
		{10, 1, [][2]int{{0, 10}}},
		{10, 3, [][2]int{{0, 3}, {3, 6}, {6, 10}}},
		{2, 4, [][2]int{{0, 0}, {0, 1}, {1, 1}, {1, 2}}},
	} {
		for r, w := range tc.want {
			if lo, hi := evenShare(tc.units, r, tc.ranks); lo != w[0] || hi != w[1] {
				t.Errorf("evenShare(%d, %d, %d) = [%d, %d), want %v", tc.units, r, tc.ranks, lo, hi, w)
			}
		}
	}
}

// TestWorkShare: shares of tiles by prefix sums of their work meet, cover
// every tile, and hold about 1/ranks of the work each.
func TestWorkShare(t *testing.T) {
	for _, tc := range []struct {
		name  string
		work  []int64
		ranks int
		want  [][2]int
	}{
		{"even", []int64{1, 1, 1, 1}, 2, [][2]int{{0, 2}, {2, 4}}},
		{"one heavy tile", []int64{1, 10, 1, 1}, 2, [][2]int{{0, 2}, {2, 4}}},
		{"heavy last", []int64{1, 1, 1, 9}, 2, [][2]int{{0, 3}, {3, 4}}},
		{"more ranks than tiles", []int64{5, 5}, 3, [][2]int{{0, 1}, {1, 1}, {1, 2}}},
		{"one rank", []int64{3, 0, 4}, 1, [][2]int{{0, 3}}},
	} {
		prefix := make([]int64, len(tc.work)+1)
		for i, w := range tc.work {
			prefix[i+1] = prefix[i] + w
		}
		for r, w := range tc.want {
			if lo, hi := workShare(prefix, r, tc.ranks); lo != w[0] || hi != w[1] {
				t.Errorf("%s: rank %d of %d: [%d, %d), want %v", tc.name, r, tc.ranks, lo, hi, w)
			}
		}
	}
	// Many uneven tiles: each of 4 shares is within one tile's work of a quarter.
	prefix := []int64{0}
	for i := range 1000 {
		prefix = append(prefix, prefix[i]+int64(1+(i*7919)%97))
	}
	total, next := prefix[1000], 0
	for r := range 4 {
		lo, hi := workShare(prefix, r, 4)
		if lo != next {
			t.Fatalf("rank %d starts at %d, the previous ended at %d", r, lo, next)
		}
		next = hi
		if got := prefix[hi] - prefix[lo]; got < total/4-97 || got > total/4+97 {
			t.Errorf("rank %d: work %d, a quarter is %d", r, got, total/4)
		}
	}
	if next != 1000 {
		t.Errorf("the shares end at tile %d of 1000", next)
	}
}

// TestPlanBig: only big, non-empty clusters with tiles in the range get
// entries; their tiles are clipped to the range and items count tiles ×
// target chunks.
func TestPlanBig(t *testing.T) {
	// Clusters: 0 big on tiles 0..3 (300 members), 1 small, 2 empty, 3 big on tiles 3..5 (100 members).
	ci := clusterInfo{
		offsets:   []int32{0, 300, 310, 310, 410},
		centroids: []int32{6000, 200, 0, 2000},
		first:     []int32{0, 3, -1, 3},
		last:      []int32{3, 3, -1, 5},
	}
	cutoff := int64(1000 * 1000)
	for _, tc := range []struct {
		b0, b1 int
		want   bigWork
	}{
		{0, 6, bigWork{item: []int32{0, 4 * 3, 4*3 + 3*1}, cluster: []int32{0, 3}, tile: []int32{0, 3}}},
		{0, 2, bigWork{item: []int32{0, 2 * 3}, cluster: []int32{0}, tile: []int32{0}}},
		{3, 4, bigWork{item: []int32{0, 3, 4}, cluster: []int32{0, 3}, tile: []int32{3, 3}}},
		{4, 6, bigWork{item: []int32{0, 2}, cluster: []int32{3}, tile: []int32{4}}},
		{6, 6, bigWork{item: []int32{0}}},
	} {
		got, err := planBig(ci, cutoff, tc.b0, tc.b1, 128)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.item, tc.want.item) || !slices.Equal(got.cluster, tc.want.cluster) || !slices.Equal(got.tile, tc.want.tile) {
			t.Errorf("tiles [%d, %d): %+v, want %+v", tc.b0, tc.b1, got, tc.want)
		}
	}
	if e := ci.evaluations(); e != 300*300+10*10+100*100 {
		t.Errorf("evaluations %d", e)
	}
	huge := clusterInfo{offsets: []int32{0, 1 << 30}, centroids: []int32{1 << 30}, first: []int32{0}, last: []int32{1 << 24}}
	if _, err := planBig(huge, 1, 0, 1<<25, 1); err == nil || !strings.Contains(err.Error(), "blocks") {
		t.Errorf("an overflowing plan: %v", err)
	}
}

func TestCandidateBetter(t *testing.T) {
	for _, tc := range []struct {
		a, b Candidate
		want bool
	}{
		{Candidate{5, 3}, Candidate{6, 1}, true},
		{Candidate{5, 3}, Candidate{5, 4}, true},
		{Candidate{5, 4}, Candidate{5, 3}, false},
		{Candidate{9, 0}, none, true},
		{none, Candidate{9, 0}, false},
		{none, none, false},
	} {
		if got := tc.a.better(tc.b); got != tc.want {
			t.Errorf("%v better than %v: %v", tc.a, tc.b, got)
		}
	}
}

// TestHostExchange: three goroutines gather their parts and reduce their
// candidates, twice in a row; then one aborts and the others' calls fail.
func TestHostExchange(t *testing.T) {
	const n, ranks = 10, 3
	ex := NewHostExchange(ranks)
	labels := make([][]int32, ranks)
	dist := make([][]float64, ranks)
	best := make([][]Candidate, ranks)
	var wg sync.WaitGroup
	errs := make([]error, ranks)
	for round := range 2 {
		for r := range ranks {
			labels[r], dist[r] = make([]int32, n), make([]float64, n)
			lo, hi := evenShare(n, r, ranks)
			for i := lo; i < hi; i++ {
				labels[r][i], dist[r][i] = int32(10*round+i), float64(i)/2
			}
			best[r] = []Candidate{{Score: uint64(10 - r), Point: int32(r)}, none, {Score: 7, Point: int32(5 - r)}}
			wg.Go(func() {
				if errs[r] = ex.AllGather(r, lo, hi, labels[r], dist[r]); errs[r] == nil {
					errs[r] = ex.AllReduceMin(r, best[r])
				}
			})
		}
		wg.Wait()
		for r := range ranks {
			if errs[r] != nil {
				t.Fatalf("round %d rank %d: %v", round, r, errs[r])
			}
			for i := range n {
				if labels[r][i] != int32(10*round+i) || dist[r][i] != float64(i)/2 {
					t.Fatalf("round %d rank %d: item %d: %d %g", round, r, i, labels[r][i], dist[r][i])
				}
			}
			if want := []Candidate{{8, 2}, none, {7, 3}}; !slices.Equal(best[r], want) {
				t.Errorf("round %d rank %d: minima %v, want %v", round, r, best[r], want)
			}
		}
	}
	boom := errors.New("boom")
	for r := range ranks {
		wg.Go(func() {
			if r == 1 {
				ex.Abort(boom)
				return
			}
			errs[r] = ex.AllGather(r, 0, 0, labels[r], dist[r])
		})
	}
	wg.Wait()
	if !errors.Is(errs[0], boom) || !errors.Is(errs[2], boom) {
		t.Errorf("after an abort: %v, %v", errs[0], errs[2])
	}
	bad := NewHostExchange(2)
	wg.Go(func() { errs[0] = bad.AllGather(0, 0, 1, make([]int32, 2), make([]float64, 2)) })
	wg.Go(func() { errs[1] = bad.AllGather(1, 1, 3, make([]int32, 3), make([]float64, 3)) })
	wg.Wait()
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "labels") {
		t.Errorf("unequal lengths: %v", errs[0])
	}
	if err := bad.AllReduceMin(5, nil); err == nil || !strings.Contains(err.Error(), "rank 5 of 2") {
		t.Errorf("rank out of range: %v", err)
	}
}

func TestGPUOptionsDefaults(t *testing.T) {
	o, err := GPUOptions{}.withDefaults()
	if err != nil || o.Assign != Shared || o.Scores != Shared || o.BigCluster != 512*512 {
		t.Errorf("defaults %+v, %v", o, err)
	}
	for _, tc := range []struct {
		opt  GPUOptions
		want string
	}{
		{GPUOptions{Assign: "fast"}, `GPU variant "fast"`},
		{GPUOptions{Scores: "x"}, `GPU variant "x"`},
		{GPUOptions{BigCluster: -1}, "cut-off -1"},
	} {
		if _, err := tc.opt.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opt, err, tc.want)
		}
	}
}
