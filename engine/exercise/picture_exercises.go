package exercise

import (
	"gpulab/engine/llm/lfm2"
)

// An elementwise problem judges every element of its outputs, for the
// output picture.
type elementwise interface {
	elements(out [][]uint32) *elementMap
}

// maxJudgedRows bounds the rows a problem without an element map is
// judged row by row for its picture (each row is one mismatch call).
const maxJudgedRows = 1 << 14

// elementsOf judges a failed problem's outputs element by element, or,
// for a problem that can only judge whole rows (a point, a token, a
// signature), row by row with its own mismatch; nil if it has too many
// rows for that.
func elementsOf(p problem, out [][]uint32) *elementMap {
	if e, ok := p.(elementwise); ok {
		return e.elements(out)
	}
	n := p.rows()
	if n > maxJudgedRows {
		return nil
	}
	m := newVectorMap("", n)
	m.unit = rowNoun(p)
	for r := range n {
		if d, err := p.mismatch(out, []int{r}); err != nil || d != "" {
			m.v[r] = vWrong
		}
	}
	return m
}

// rowNoun is what the rows of a problem's check are, in the plural.
func rowNoun(p problem) string {
	switch p.(type) {
	case assignProblem:
		return "points"
	case routerProblem:
		return "tokens"
	case sqfdProblem:
		return "signatures"
	}
	return "rows"
}

// elements judges C element by element against float64 dot products, to
// the tolerance mismatch uses.
func (p gemmProblem) elements(out [][]uint32) *elementMap {
	m := newMatrixMap("C", p.s.M, p.s.N)
	ref := make([]float64, p.s.N)
	tol := p.tolerance()
	for i := range p.s.M {
		p.referenceRow(i, ref)
		for j, w := range ref {
			m.v[i*p.s.N+j] = judgeFloat(out[0][i*p.s.N+j], w, tol)
		}
	}
	return m
}

// elements judges y element by element against lfm2.RMSNorm's rows.
func (p rmsnormProblem) elements(out [][]uint32) *elementMap {
	m := newMatrixMap("y", p.n, p.width)
	want := make([]float32, p.width)
	for r := range p.n {
		if lfm2.RMSNorm(want, p.x[r*p.width:(r+1)*p.width], p.w, rmsnormEps) != nil {
			return nil
		}
		for i, w := range want {
			m.v[r*p.width+i] = judgeFloat(out[0][r*p.width+i], float64(w), rmsnormTol)
		}
	}
	return m
}
