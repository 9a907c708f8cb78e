package sparse

import (
	"testing"
	"time"

	"gpulab/engine/bench"
	"gpulab/engine/cuda/cudatest"
)

// spmvTestMatrices are the matrices every SpMV step must get right: row
// counts that are multiples of no block, warp or row group; empty rows;
// rows of one entry; a rectangular matrix; power-law rows; and one row
// longer than a stream block (streamCap entries) among short ones.
func spmvTestMatrices(t *testing.T) map[string]*CSR {
	out := map[string]*CSR{"rectangular 300×517, every 7th row empty": rectangular(t, 300, 517, 9, 1)}
	for _, spec := range []string{"uniform:n=3001,k=7", "banded:n=777,w=5", "poisson:k=33", "rmat:scale=11,ef=8", "uniform:n=1,k=1"} {
		m, err := Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		out[spec] = m
	}
	long := &COO{Rows: 1001, Cols: 6007}
	for i := range long.Rows {
		n := i % 3 // rows of 0, 1 and 2 entries ...
		if i == 500 {
			n = 2*streamCap + 77 // ... and one longer than two stream blocks
		}
		for j := range n {
			long.Row, long.Col, long.Val = append(long.Row, int32(i)), append(long.Col, int32((j*7+i)%long.Cols)), append(long.Val, float32(j%9)-4)
		}
	}
	m, err := long.ToCSR()
	if err != nil {
		t.Fatal(err)
	}
	out["one row of 4173 entries among short ones"] = m
	return out
}

// TestCUDASpMVLadder runs every CUDA case of the spmv suite (the bound, the
// probe, each row of spmvSteps and cuSPARSE) once on each test matrix, and
// requires each to match the float64 reference.
func TestCUDASpMVLadder(t *testing.T) {
	ctx := cudatest.Context(t)
	for name, m := range spmvTestMatrices(t) {
		cases, cleanup, err := spmvCUDA(ctx, newSpMVProblem(m, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := 2 + len(spmvSteps) + 2; len(cases) != want {
			t.Errorf("%s: %d cases, want %d", name, len(cases), want)
		}
		for _, c := range cases {
			r := bench.Measure(c, bench.Options{Warmup: 1, MinReps: 1, MaxReps: 1, MinTime: time.Nanosecond})
			if !r.OK {
				t.Errorf("%s, %s: %s", name, c.Variant, r.Error)
			}
		}
		cleanup()
	}
}

// TestSpMVTestMatrices runs the CPU SpMV on the GPU ladder's test matrices,
// so that they are checked where no GPU is.
func TestSpMVTestMatrices(t *testing.T) {
	for name, m := range spmvTestMatrices(t) {
		if err := m.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p := newSpMVProblem(m, name)
		y := make([]float32, m.Rows)
		if err := SpMVParallel(m, p.x, y); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r := bench.Compare(y, p.want); !(r.MaxRelErr <= p.tol) {
			t.Errorf("%s: max relative error %g, tolerance %g", name, r.MaxRelErr, p.tol)
		}
	}
}

// TestSELL multiplies through the SELL-C-σ arrays on the CPU, as
// spmv_05_sell.cu does on the GPU, on the ladder's test matrices and small
// chunks and windows that divide none of them.
func TestSELL(t *testing.T) {
	for name, m := range spmvTestMatrices(t) {
		for _, shape := range [][2]int{{sellC, sellSigma}, {4, 7}} {
			c, sigma := shape[0], shape[1]
			s := newSELL(m, c, sigma)
			if len(s.chunkPtr) != (m.Rows+c-1)/c+1 || len(s.colIdx) != int(s.chunkPtr[len(s.chunkPtr)-1]) {
				t.Fatalf("%s, C=%d: %d chunk pointers ending at %d, for %d rows and %d stored entries", name, c, len(s.chunkPtr), s.chunkPtr[len(s.chunkPtr)-1], m.Rows, len(s.colIdx))
			}
			p := newSpMVProblem(m, name)
			y := make([]float32, m.Rows)
			for slot := range m.Rows {
				start := int(s.chunkPtr[slot/c]) + slot%c
				var sum float32
				for j := range int(s.rowLen[slot]) {
					sum += s.val[start+j*c] * p.x[s.colIdx[start+j*c]]
				}
				y[s.perm[slot]] = sum
			}
			if r := bench.Compare(y, p.want); !(r.MaxRelErr <= p.tol) {
				t.Errorf("%s, SELL-%d-%d: max relative error %g at row %d, tolerance %g", name, c, sigma, r.MaxRelErr, r.Worst, p.tol)
			}
			for lo := 0; lo < m.Rows; lo += sigma { // sorted by length within each window
				w := s.rowLen[lo:min(lo+sigma, m.Rows)]
				for i := 1; i < len(w); i++ {
					if w[i] > w[i-1] {
						t.Fatalf("%s, SELL-%d-%d: slot %d has %d entries after %d", name, c, sigma, lo+i, w[i], w[i-1])
					}
				}
			}
		}
	}
}
