package sparse

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"gpulab/engine"
)

// Generators are deterministic: the same arguments (and seed) give the same
// matrix on every platform. Values are uniform in [-1, 1) unless noted.

func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
}

func randVal(r *rand.Rand) float32 { return r.Float32()*2 - 1 }

// Uniform returns an n×n matrix with k = nnzPerRow distinct, uniformly random
// columns in every row (k is clamped to [0, n]). It panics if n·k does not
// fit int32.
func Uniform(n, nnzPerRow int, seed uint64) *CSR {
	n = max(n, 0)
	k := min(max(nnzPerRow, 0), n)
	if n*k > math.MaxInt32 {
		panic(fmt.Sprintf("sparse: Uniform: %d×%d entries do not fit int32", n, k))
	}
	r := newRand(seed)
	m := &CSR{Rows: n, Cols: n, RowPtr: make([]int32, n+1),
		ColIdx: make([]int32, 0, n*k), Val: make([]float32, 0, n*k)}
	var seen map[int32]bool
	if k > 64 {
		seen = make(map[int32]bool, k)
	}
	for i := range n {
		// Floyd's sampling: k distinct values from [0, n).
		row := m.ColIdx[len(m.ColIdx):len(m.ColIdx)]
		has := func(c int32) bool {
			if seen != nil {
				return seen[c]
			}
			return slices.Contains(row, c)
		}
		clear(seen)
		for j := n - k; j < n; j++ {
			c := int32(r.IntN(j + 1))
			if has(c) {
				c = int32(j)
			}
			row = append(row, c)
			if seen != nil {
				seen[c] = true
			}
		}
		slices.Sort(row)
		m.ColIdx = m.ColIdx[:len(m.ColIdx)+k]
		for range k {
			m.Val = append(m.Val, randVal(r))
		}
		m.RowPtr[i+1] = int32(len(m.Val))
	}
	return m
}

// Banded returns an n×n matrix with every entry (i, j), |i-j| ≤ halfWidth,
// stored: 2·halfWidth+1 entries per interior row.
func Banded(n, halfWidth int, seed uint64) *CSR {
	n, w := max(n, 0), max(halfWidth, 0)
	if n*(2*w+1) > math.MaxInt32 {
		panic(fmt.Sprintf("sparse: Banded: n=%d, w=%d gives too many entries for int32", n, w))
	}
	r := newRand(seed)
	m := &CSR{Rows: n, Cols: n, RowPtr: make([]int32, n+1)}
	for i := range n {
		for j := max(i-w, 0); j <= min(i+w, n-1); j++ {
			m.ColIdx = append(m.ColIdx, int32(j))
			m.Val = append(m.Val, randVal(r))
		}
		m.RowPtr[i+1] = int32(len(m.Val))
	}
	return m
}

// Poisson2D returns the 5-point Laplacian of a k×k grid: n = k² rows, 4 on
// the diagonal and -1 for each grid neighbour (so interior rows sum to 0).
// Grid point (r, c) is row r·k+c.
func Poisson2D(k int) *CSR {
	k = max(k, 0)
	n := k * k
	m := &CSR{Rows: n, Cols: n, RowPtr: make([]int32, n+1),
		ColIdx: make([]int32, 0, 5*n), Val: make([]float32, 0, 5*n)}
	add := func(j int, v float32) {
		m.ColIdx = append(m.ColIdx, int32(j))
		m.Val = append(m.Val, v)
	}
	for r := range k {
		for c := range k {
			i := r*k + c
			if r > 0 {
				add(i-k, -1)
			}
			if c > 0 {
				add(i-1, -1)
			}
			add(i, 4)
			if c < k-1 {
				add(i+1, -1)
			}
			if r < k-1 {
				add(i+k, -1)
			}
			m.RowPtr[i+1] = int32(len(m.Val))
		}
	}
	return m
}

// RMAT returns an R-MAT (recursive matrix) graph: n = 2^scale vertices and
// edgeFactor·n edges, each placed by descending scale levels and picking the
// top-left, top-right, bottom-left or bottom-right quadrant with
// probabilities a, b, c and d = 1-a-b-c. Skewed a gives power-law row
// lengths. Repeated edges are summed, so nnz ≤ edgeFactor·n and a summed
// value may leave [-1, 1). It panics on scale outside [0, 30], negative
// edgeFactor, or probabilities that are negative or sum above 1.
func RMAT(scale, edgeFactor int, a, b, c float64, seed uint64) *CSR {
	if err := checkRMAT(scale, edgeFactor, a, b, c); err != nil {
		panic(err)
	}
	n := 1 << scale
	edges := edgeFactor * n
	r := newRand(seed)
	coo := &COO{Rows: n, Cols: n,
		Row: make([]int32, edges), Col: make([]int32, edges), Val: make([]float32, edges)}
	ab, abc := a+b, a+b+c
	for e := range edges {
		var i, j int32
		for level := scale - 1; level >= 0; level-- {
			bit := int32(1) << level
			p := r.Float64()
			switch {
			case p < a:
			case p < ab:
				j |= bit
			case p < abc:
				i |= bit
			default:
				i |= bit
				j |= bit
			}
		}
		coo.Row[e], coo.Col[e], coo.Val[e] = i, j, randVal(r)
	}
	return coo.compress() // valid by construction
}

func checkRMAT(scale, edgeFactor int, a, b, c float64) error {
	switch {
	case scale < 0 || scale > 30:
		return fmt.Errorf("sparse: RMAT: scale = %d, want 0..30", scale)
	case edgeFactor < 0 || edgeFactor > math.MaxInt32>>scale:
		return fmt.Errorf("sparse: RMAT: ef = %d out of range for scale %d", edgeFactor, scale)
	case !(a >= 0) || !(b >= 0) || !(c >= 0) || !(a+b+c <= 1+1e-9):
		return fmt.Errorf("sparse: RMAT: probabilities a=%g, b=%g, c=%g must be ≥ 0 with a+b+c ≤ 1", a, b, c)
	}
	return nil
}

// Generate builds a matrix from a spec "kind:key=value,...":
//
//	uniform:n=4096,k=16[,seed=1]        Uniform(n, k, seed)
//	banded:n=4096,w=8[,seed=1]          Banded(n, w, seed)
//	poisson:k=64                        Poisson2D(k)
//	rmat:scale=12[,ef=16,a=0.57,b=0.19,c=0.19,seed=1]
//
// Bracketed fields are optional with the defaults shown. Errors name the bad
// field.
func Generate(spec string) (*CSR, error) {
	kind, args, _ := strings.Cut(strings.TrimSpace(spec), ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	fields := map[string]string{}
	if strings.TrimSpace(args) != "" {
		for kv := range strings.SplitSeq(args, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
			if !ok || k == "" {
				return nil, fmt.Errorf("sparse: spec %q: field %q is not key=value", spec, kv)
			}
			if _, dup := fields[k]; dup {
				return nil, fmt.Errorf("sparse: spec %q: field %q given twice", spec, k)
			}
			fields[k] = v
		}
	}
	p := specParser{spec: spec, fields: fields}
	var m func() *CSR
	// need is the host memory the generator takes, for what.
	var need uint64
	what := "its CSR arrays"
	switch kind {
	case "uniform":
		n, k, seed := p.int("n", -1, 1, math.MaxInt32), p.int("k", -1, 0, math.MaxInt32), p.seed()
		if p.err == nil && k > n {
			p.fail("k", "k = %d exceeds n = %d", k, n)
		} else if p.err == nil && n*k > math.MaxInt32 {
			p.fail("k", "n·k = %d entries do not fit int32", n*k)
		}
		m, need = func() *CSR { return Uniform(n, k, seed) }, csrBytes(n, n*k)
	case "banded":
		n, w, seed := p.int("n", -1, 1, math.MaxInt32), p.int("w", -1, 0, math.MaxInt32), p.seed()
		if p.err == nil && n*(2*w+1) > math.MaxInt32 {
			p.fail("w", "n·(2w+1) = %d entries do not fit int32", n*(2*w+1))
		}
		m, need = func() *CSR { return Banded(n, w, seed) }, csrBytes(n, n*(2*w+1))
	case "poisson":
		k := p.int("k", -1, 1, 20000)
		m, need = func() *CSR { return Poisson2D(k) }, csrBytes(k*k, 5*k*k)
	case "rmat":
		scale := p.int("scale", -1, 0, 30)
		ef := p.int("ef", 16, 0, math.MaxInt32)
		a, b, c := p.float("a", 0.57), p.float("b", 0.19), p.float("c", 0.19)
		seed := p.seed()
		if p.err == nil {
			if ef > math.MaxInt32>>scale {
				p.fail("ef", "ef·2^scale = %d edges do not fit int32", ef<<scale)
			} else if a+b+c > 1+1e-9 {
				p.fail("c", "a+b+c = %g exceeds 1", a+b+c)
			}
		}
		m = func() *CSR { return RMAT(scale, ef, a, b, c, seed) }
		need, what = 12*uint64(ef<<scale)+toCSRBytes(1<<scale, ef<<scale), "its edges and their conversion to CSR"
	default:
		return nil, fmt.Errorf("sparse: spec %q: unknown kind %q (want uniform, banded, poisson or rmat)", spec, kind)
	}
	if p.err != nil {
		return nil, p.err
	}
	for k := range fields {
		if !p.used[k] {
			return nil, fmt.Errorf("sparse: spec %q: unknown field %q for %s", spec, k, kind)
		}
	}
	if err := engine.CheckHostMemory(fmt.Sprintf("sparse: matrix %s", spec), what, need); err != nil {
		return nil, err
	}
	return m(), nil
}

// csrBytes is the memory of a CSR matrix of rows rows and nnz entries:
// row pointers, column indices and values.
func csrBytes(rows, nnz int) uint64 { return 4*uint64(rows+1) + 8*uint64(nnz) }

type specParser struct {
	spec   string
	fields map[string]string
	used   map[string]bool
	err    error
}

func (p *specParser) fail(field, format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("sparse: spec %q: field %s: %s", p.spec, field, fmt.Sprintf(format, args...))
	}
}

func (p *specParser) get(field string) (string, bool) {
	if p.used == nil {
		p.used = map[string]bool{}
	}
	p.used[field] = true
	v, ok := p.fields[field]
	return v, ok
}

// int parses an integer field in [lo, hi]; def < 0 makes it required.
func (p *specParser) int(field string, def, lo, hi int) int {
	s, ok := p.get(field)
	if !ok {
		if def < 0 {
			p.fail(field, "missing")
			return 0
		}
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		p.fail(field, "%q is not an integer", s)
		return 0
	}
	if v < lo || v > hi {
		p.fail(field, "%d out of range [%d, %d]", v, lo, hi)
		return 0
	}
	return v
}

func (p *specParser) float(field string, def float64) float64 {
	s, ok := p.get(field)
	if !ok {
		return def
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		p.fail(field, "%q is not a number", s)
		return 0
	}
	if !(v >= 0 && v <= 1) {
		p.fail(field, "%g is not a probability in [0, 1]", v)
		return 0
	}
	return v
}

func (p *specParser) seed() uint64 {
	s, ok := p.get("seed")
	if !ok {
		return 1
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		p.fail("seed", "%q is not an unsigned integer", s)
		return 0
	}
	return v
}
