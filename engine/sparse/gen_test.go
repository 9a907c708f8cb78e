package sparse

import (
	"reflect"
	"testing"
)

func TestGenerators(t *testing.T) {
	cases := []struct {
		name     string
		gen      func(seed uint64) *CSR
		n        int
		nnz      int // -1: only bounded by maxNNZ
		maxNNZ   int
		inRange  bool // values in [-1, 1)
		seedFree bool // output does not depend on the seed
	}{
		{"uniform", func(s uint64) *CSR { return Uniform(1000, 16, s) }, 1000, 16000, 16000, true, false},
		{"uniform-full", func(s uint64) *CSR { return Uniform(20, 20, s) }, 20, 400, 400, true, false},
		{"uniform-large-k", func(s uint64) *CSR { return Uniform(500, 100, s) }, 500, 50000, 50000, true, false},
		{"uniform-clamped", func(s uint64) *CSR { return Uniform(5, 9, s) }, 5, 25, 25, true, false},
		// Banded: n(2w+1) minus the w(w+1) entries cut off at the two corners.
		{"banded", func(s uint64) *CSR { return Banded(100, 3, s) }, 100, 100*7 - 3*4, 700, true, false},
		{"banded-w0", func(s uint64) *CSR { return Banded(10, 0, s) }, 10, 10, 10, true, false},
		// Poisson: 5n minus one per boundary side of each boundary point: 5k² - 4k.
		{"poisson", func(uint64) *CSR { return Poisson2D(16) }, 256, 5*256 - 4*16, 1280, false, true},
		{"rmat", func(s uint64) *CSR { return RMAT(10, 8, 0.57, 0.19, 0.19, s) }, 1024, -1, 8192, false, false},
		{"rmat-scale0", func(s uint64) *CSR { return RMAT(0, 3, 0.57, 0.19, 0.19, s) }, 1, 1, 1, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.gen(42)
			if err := m.Validate(); err != nil {
				t.Fatalf("invalid: %v", err)
			}
			if m.Rows != tc.n || m.Cols != tc.n {
				t.Fatalf("shape %d×%d, want %d×%d", m.Rows, m.Cols, tc.n, tc.n)
			}
			if tc.nnz >= 0 && m.NNZ() != tc.nnz {
				t.Fatalf("nnz = %d, want %d", m.NNZ(), tc.nnz)
			}
			if m.NNZ() > tc.maxNNZ || m.NNZ() == 0 {
				t.Fatalf("nnz = %d, want in (0, %d]", m.NNZ(), tc.maxNNZ)
			}
			if tc.inRange {
				for k, v := range m.Val {
					if v < -1 || v >= 1 {
						t.Fatalf("value %d = %g outside [-1, 1)", k, v)
					}
				}
			}
			if again := tc.gen(42); !reflect.DeepEqual(again, m) {
				t.Fatalf("not deterministic for a fixed seed")
			}
			if other := tc.gen(43); reflect.DeepEqual(other, m) != tc.seedFree {
				t.Fatalf("seed 43 equal to seed 42: %v, want %v", !tc.seedFree, tc.seedFree)
			}
		})
	}
}

func TestUniformRowLengths(t *testing.T) {
	m := Uniform(200, 9, 7)
	mn, mx, mean, sd := RowStats(m)
	if mn != 9 || mx != 9 || mean != 9 || sd != 0 {
		t.Fatalf("RowStats = %d %d %g %g, want every row 9", mn, mx, mean, sd)
	}
}

func TestPoissonRowSums(t *testing.T) {
	const k = 10
	m := Poisson2D(k)
	for i := range m.Rows {
		var sum float32
		for p := m.RowPtr[i]; p < m.RowPtr[i+1]; p++ {
			sum += m.Val[p]
		}
		r, c := i/k, i%k
		boundarySides := 0
		for _, b := range []bool{r == 0, r == k-1, c == 0, c == k-1} {
			if b {
				boundarySides++
			}
		}
		// Each missing neighbour leaves +1: interior rows sum to 0.
		if want := float32(boundarySides); sum != want {
			t.Fatalf("row %d (grid %d,%d) sums to %g, want %g", i, r, c, sum, want)
		}
	}
	// Symmetric: equal to its transpose.
	if !reflect.DeepEqual(m.Transpose(), m) {
		t.Fatalf("Poisson2D is not symmetric")
	}
}

func TestRMATSkew(t *testing.T) {
	skewed := RMAT(12, 16, 0.57, 0.19, 0.19, 1)
	_, mx, mean, _ := RowStats(skewed)
	if float64(mx) < 10*mean {
		t.Fatalf("R-MAT max row %d not much larger than mean %.1f", mx, mean)
	}
	// a = b = c = d = 0.25 is Erdős–Rényi-like: no heavy rows.
	flat := RMAT(12, 16, 0.25, 0.25, 0.25, 1)
	_, fmx, fmean, _ := RowStats(flat)
	if float64(fmx) > 3*fmean {
		t.Fatalf("uniform R-MAT max row %d vs mean %.1f: unexpectedly skewed", fmx, fmean)
	}
	if skewed.NNZ() >= 16<<12 || flat.NNZ() > 16<<12 {
		t.Fatalf("nnz %d / %d: skewed R-MAT should have summed duplicates", skewed.NNZ(), flat.NNZ())
	}
}

func TestGenerate(t *testing.T) {
	cases := []struct {
		spec string
		want *CSR   // nil: only check the error
		err  string // substring; "" for success
	}{
		{"uniform:n=4096,k=16", Uniform(4096, 16, 1), ""},
		{"uniform:n=100,k=4,seed=9", Uniform(100, 4, 9), ""},
		{" Uniform: n = 100 , k = 4 ", Uniform(100, 4, 1), ""},
		{"banded:n=4096,w=8", Banded(4096, 8, 1), ""},
		{"poisson:k=64", Poisson2D(64), ""},
		{"rmat:scale=12,ef=16,a=0.57,b=0.19,c=0.19", RMAT(12, 16, 0.57, 0.19, 0.19, 1), ""},
		{"rmat:scale=6", RMAT(6, 16, 0.57, 0.19, 0.19, 1), ""},
		{"uniform:n=4096", nil, "field k: missing"},
		{"uniform:n=abc,k=3", nil, `field n: "abc" is not an integer`},
		{"uniform:n=10,k=11", nil, "field k: k = 11 exceeds n = 10"},
		{"uniform:n=10,k=2,q=1", nil, `unknown field "q"`},
		{"uniform:n=10,k=2,n=3", nil, `field "n" given twice`},
		{"uniform:n=10,k", nil, `field "k" is not key=value`},
		{"banded:n=-5,w=1", nil, "field n: -5 out of range"},
		{"poisson:k=0", nil, "field k: 0 out of range"},
		{"rmat:scale=31", nil, "field scale: 31 out of range"},
		{"rmat:scale=4,a=1.5", nil, "field a: 1.5 is not a probability"},
		{"rmat:scale=4,a=0.5,b=0.3,c=0.3", nil, "field c: a+b+c = 1.1 exceeds 1"},
		{"rmat:scale=4,seed=-1", nil, "field seed"},
		{"rmat:scale=30,ef=4", nil, "field ef"},
		{"hilbert:n=3", nil, `unknown kind "hilbert"`},
		{"", nil, "unknown kind"},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			m, err := Generate(tc.spec)
			fmtCheckErr(t, err, tc.err)
			if tc.want != nil && !reflect.DeepEqual(m, tc.want) {
				t.Fatalf("Generate(%q) differs from the direct call", tc.spec)
			}
		})
	}
}
