package sparse

import (
	"fmt"
	"testing"

	"gpulab/engine/cuda"
	"gpulab/engine/cuda/cudatest"
)

// gpuCases are the products every GPU SpGEMM must get right: square and
// rectangular, sizes that are not multiples of any tile, empty rows, rows
// long enough for the dense kernels (more than 4096 products and entries),
// and power-law rows.
func gpuCases(t *testing.T) []struct {
	name string
	a, b *CSR
} {
	gen := func(spec string) *CSR {
		m, err := Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	type pair = struct {
		name string
		a, b *CSR
	}
	var out []pair
	// Under compute-sanitizer the long-row matrix has a tenth of the rows:
	// its rows are as long.
	long := fmt.Sprintf("uniform:n=%d,k=70", cudatest.Size(40000, 4000))
	for _, spec := range []string{"uniform:n=1000,k=7", "banded:n=777,w=5", "poisson:k=33", "rmat:scale=11,ef=8", long} {
		m := gen(spec)
		out = append(out, pair{spec + " squared", m, m})
	}
	out = append(out, pair{"rectangular 300×517 · 517×211", rectangular(t, 300, 517, 9, 1), rectangular(t, 517, 211, 6, 2)})
	// 64 rows of 6400 products spread over a million columns: several
	// windows of the windowed dense kernels, symbolic and numeric.
	wide := &COO{Rows: 64, Cols: 1_000_003}
	for i := range 64 {
		for j := range 100 {
			wide.Row, wide.Col, wide.Val = append(wide.Row, int32(i)), append(wide.Col, int32((j*10007+i*7919)%wide.Cols)), append(wide.Val, float32(j%5)-2)
		}
	}
	w, err := wide.ToCSR()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, pair{"64×64 · 64×1000003", gen("uniform:n=64,k=64"), w})
	return out
}

// TestGPUSpGEMM checks every step of the ladder, and cuSPARSE, against CPU
// Gustavson: identical structure, values within float32 rounding. Under
// compute-sanitizer cuSPARSE is left out: it is the peer, not our code, and
// under initcheck its SpGEMM fails with an internal error.
func TestGPUSpGEMM(t *testing.T) {
	ctx := cudatest.Context(t)
	g := NewGPUSpGEMM(ctx)
	defer g.Close()
	sp, err := ctx.NewSparse(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Destroy()
	for _, tc := range gpuCases(t) {
		want, err := Gustavson(tc.a, tc.b)
		if err != nil {
			t.Fatal(err)
		}
		da, err := UploadCSR(ctx, tc.a)
		if err != nil {
			t.Fatal(err)
		}
		db, err := UploadCSR(ctx, tc.b)
		if err != nil {
			t.Fatal(err)
		}
		check := func(name string, c cuda.CSR, err error) {
			t.Helper()
			if err != nil {
				t.Errorf("%s, %s: %v", tc.name, name, err)
				return
			}
			defer c.Free()
			got, err := DownloadCSR(c)
			if err != nil {
				t.Fatal(err)
			}
			if r := sameStructure(got, want); !(r.MaxRelErr <= 1e-4) {
				t.Errorf("%s, %s: got %s, want %s; %s", tc.name, name, got.Shape(), want.Shape(), describeMismatch(got, want))
			}
		}
		for _, step := range GPUSteps {
			c, stats, err := g.Multiply(step, da, db)
			check(step, c, err)
			if err == nil {
				t.Logf("%s, %s: %v, peak %d bytes, %d phases", tc.name, step, stats.Total, stats.PeakBytes, len(stats.Phases))
			}
		}
		if !cuda.Sanitized() {
			c, _, err := g.CuSPARSE(sp, da, db)
			check("cusparse", c, err)
		}
		da.Free()
		db.Free()
	}
}

// rectangular is a rows×cols matrix of about perRow entries per row, every
// 7th row empty.
func rectangular(t *testing.T, rows, cols, perRow int, seed uint64) *CSR {
	t.Helper()
	square := Uniform(max(rows, cols), perRow, seed)
	coo := square.ToCOO()
	out := &COO{Rows: rows, Cols: cols}
	for k := range coo.Val {
		if int(coo.Row[k]) < rows && int(coo.Col[k]) < cols && coo.Row[k]%7 != 3 {
			out.Row, out.Col, out.Val = append(out.Row, coo.Row[k]), append(out.Col, coo.Col[k]), append(out.Val, coo.Val[k])
		}
	}
	m, err := out.ToCSR()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// describeMismatch names the first row where two results differ.
func describeMismatch(got, want *CSR) string {
	if got.Rows != want.Rows || got.Cols != want.Cols {
		return "shapes differ"
	}
	for i := 0; i < want.Rows; i++ {
		g0, g1, w0, w1 := got.RowPtr[i], got.RowPtr[i+1], want.RowPtr[i], want.RowPtr[i+1]
		if g1-g0 != w1-w0 {
			return fmt.Sprintf("row %d has %d entries, want %d", i, g1-g0, w1-w0)
		}
		for p := range w1 - w0 {
			if got.ColIdx[g0+p] != want.ColIdx[w0+p] {
				return fmt.Sprintf("row %d entry %d: column %d, want %d", i, p, got.ColIdx[g0+p], want.ColIdx[w0+p])
			}
		}
	}
	return "values differ"
}

func TestGPUSpGEMMRejects(t *testing.T) {
	ctx := cudatest.Context(t)
	g := NewGPUSpGEMM(ctx)
	defer g.Close()
	a, _ := UploadCSR(ctx, Uniform(50, 3, 1))
	defer a.Free()
	b, _ := UploadCSR(ctx, Banded(40, 2, 1))
	defer b.Free()
	if _, _, err := g.Multiply("04_binned", a, b); err == nil {
		t.Error("50×50 · 40×40 accepted")
	}
	if _, _, err := g.Multiply("99_magic", a, a); err == nil {
		t.Error("unknown step accepted")
	}
}
