package sqfd

import (
	"fmt"
	"math"

	"gpulab/engine/cluster/kmedoids"
)

// Checks of the GPU's float32 results against the float64 CPU reference,
// shared by the tests and the benchmarks. Two results may differ only by
// rounding: a label where two medoids are equally near within the bound, a
// medoid where two candidates' scores are equal within theirs.

// roundoff2 bounds the error of a float32 SQFD² of signatures i and j:
// 10⁻⁴·(S(i,i) + S(j,j)). Rounding a few hundred float32 terms costs about
// 10⁻⁶ of that scale; a wrong index or a lost term costs far more.
func (m *Metric) roundoff2(i, j int) float64 { return 1e-4 * (m.self[i] + m.self[j]) }

// roundoff turns a bound t on |a² − d²| into one on |a − d|, for d ≥ 0.
func roundoff(t, d float64) float64 { return min(math.Sqrt(t), t/d) }

// checkLabels checks the labels and distances of the given items, from
// medoids, against the CPU. It returns the largest distance error (relative
// to max(d, 1)), and an error for a label that another medoid beats by more
// than rounding, or a distance off by more than rounding.
func checkLabels(m *Metric, medoids []int, labels []int32, dist []float64, items []int) (float64, error) {
	worst := 0.0
	for _, i := range items {
		l := int(labels[i])
		if l < 0 || l >= len(medoids) {
			return worst, fmt.Errorf("signature %d: label %d of %d clusters", i, l, len(medoids))
		}
		g := medoids[l]
		dg := m.Distance(i, g)
		for c, mc := range medoids {
			if dc := m.Distance(i, mc); dc*dc < dg*dg-m.roundoff2(i, g)-m.roundoff2(i, mc) {
				return worst, fmt.Errorf("signature %d: label %d (SQFD %g), but medoid %d is nearer (%g)", i, l, dg, c, dc)
			}
		}
		e := math.Abs(dist[i] - dg)
		if e > roundoff(m.roundoff2(i, g), dg)+1e-6*dg {
			return worst, fmt.Errorf("signature %d: distance %g to medoid %d, CPU %g", i, dist[i], l, dg)
		}
		worst = max(worst, e/max(dg, 1))
	}
	return worst, nil
}

// scoreOf is the CPU score of i, its sum of distances to members, and the
// bound on a GPU score's error: roundoff per term and half a 2⁻³² step.
func (m *Metric) scoreOf(i int, members []int32) (score, bound float64) {
	for _, j := range members {
		d := m.Distance(i, int(j))
		score += d
		if int(j) != i {
			bound += roundoff(m.roundoff2(i, int(j)), d) + math.Ldexp(1, -33)
		}
	}
	return score, bound
}

// checkMedoids checks new medoids (got) against others from the same labels
// (want, from the CPU or another kernel): where they differ, got must be a
// member of the cluster whose CPU score is no worse than want's beyond the
// two scores' bounds.
func checkMedoids(m *Metric, labels []int32, got, want []int) error {
	list, offsets := kmedoids.Clusters(labels, len(want))
	for c := range want {
		if got[c] == want[c] {
			continue
		}
		members := list[offsets[c]:offsets[c+1]]
		in := false
		for _, j := range members {
			in = in || int(j) == got[c]
		}
		if !in {
			return fmt.Errorf("cluster %d: medoid %d is not a member (want %d)", c, got[c], want[c])
		}
		sg, bg := m.scoreOf(got[c], members)
		sw, bw := m.scoreOf(want[c], members)
		if sg > sw+bg+bw {
			return fmt.Errorf("cluster %d of %d: medoid %d scores %g, but %d scores %g (bounds %g, %g)", c, len(members), got[c], sg, want[c], sw, bg, bw)
		}
	}
	return nil
}
