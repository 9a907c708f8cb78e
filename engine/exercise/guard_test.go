package exercise

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"gpulab/engine/exercise/wire"
	"gpulab/engine/gemm"
)

// TestZoneDamage: a zone's report counts the changed words of each part
// of an allocation, nearest and farthest, and only an input's own.
func TestZoneDamage(t *testing.T) {
	in, _ := newZone([]float32{1, 2, 3}, 8, 4)
	out, _ := newZone(wire.Out(3), 8, 4)
	if in.pre != 8 || in.post != 8 || in.words() != 19 {
		t.Fatalf("zone %+v", in)
	}
	odd, _ := newZone(wire.Out(3), 6, 4)
	if odd.pre != 8 || odd.post != 6 {
		t.Errorf("the zone before is not rounded up to the alignment: %+v", odd)
	}
	for _, tc := range []struct {
		name   string
		z      zone
		change map[int]uint32 // allocation word -> new value
		want   []uint32
	}{
		{"untouched input", in, nil, make([]uint32, 9)},
		{"an output's own elements", out, map[int]uint32{8: 1, 9: 2, 10: 3}, make([]uint32, 9)},
		{"just before", out, map[int]uint32{7: 0}, []uint32{1, 1, 1, 0, 0, 0, 0, 0, 0}},
		{"before, two apart", out, map[int]uint32{2: 0, 5: 0}, []uint32{2, 3, 6, 0, 0, 0, 0, 0, 0}},
		{"an input's element", in, map[int]uint32{9: 0, 10: 0}, []uint32{0, 0, 0, 2, 1, 2, 0, 0, 0}},
		{"past the end", out, map[int]uint32{11: 0, 13: 0, 18: 0}, []uint32{0, 0, 0, 0, 0, 0, 3, 0, 7}},
		{"a write of the zone's own bits", out, map[int]uint32{12: wire.GuardBits}, make([]uint32, 9)},
	} {
		all := tc.z.initial()
		for i, v := range tc.change {
			all[i] = v
		}
		if got := tc.z.damage(all); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: damage %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := out.result(out.initial()); len(got) != 3 || got[0] != unsetBits {
		t.Errorf("an output starts unset: %v", got)
	}
}

// TestStrayWords: what the judge says of each kind of stray write, in
// rows for a matrix and elements for a vector.
func TestStrayWords(t *testing.T) {
	for _, tc := range []struct {
		s    stray
		want string
	}{
		{stray{name: "C", where: 2, count: 495, first: 0, last: 494, n: 17 * 33, cols: 33}, "wrote 495 elements past the end of C (rows 17–31 of a 17-row C)"},
		{stray{name: "C", where: 0, count: 1, first: 1, last: 1, n: 4, cols: 2}, "wrote 1 element before the start of C (row -1 of a 2-row C)"},
		{stray{name: "out", where: 2, count: 3, first: 0, last: 2, n: 700}, "wrote 3 elements past the end of out (out[700]–out[702] of a 700-element out)"},
		{stray{name: "A", where: 1, count: 2, first: 5, last: 9, n: 10}, "wrote into its input A: 2 elements changed (A[5] to A[9])"},
	} {
		if got := tc.s.String(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
		if p := tc.s.picture(); len(p.PNG) == 0 || !strings.Contains(p.Caption, tc.s.name) {
			t.Errorf("%+v: picture %+v", tc.s, p)
		}
	}
}

// strayKernels are gemm/tiled kernels that write outside C or into an
// input, made from the reference solution by one edit each, and what the
// check must say of them on the first shape, M=N=K=1: a tile of T×T
// work-items of which only (0, 0) is inside C.
func strayKernels(t *testing.T, lang string) (tile int, cases []struct{ name, src, want string }) {
	var ref, store, guardedStore string
	switch lang {
	case LangOpenCL:
		tile, ref, store = 16, mustOpenCL(t, "gemm/02_local_tiling"), "C[m*N + n] = acc;"
		guardedStore = "if (m < M && n < N) {\n        " + store + "\n    }"
	default:
		tile, ref, store = 32, mustCUDA(t, "gemm/03_smem_tiling"), "C[(size_t)row * N + col] = acc;"
		guardedStore = "if (row < M && col < N) " + store
	}
	edit := func(with string) string {
		if !strings.Contains(ref, guardedStore) {
			t.Fatalf("the reference's store %q is not in\n%s", guardedStore, ref)
		}
		return strings.Replace(ref, guardedStore, with, 1)
	}
	row, col := map[string][2]string{LangOpenCL: {"m", "n"}, LangCUDA: {"row", "col"}}[lang][0], map[string][2]string{LangOpenCL: {"m", "n"}, LangCUDA: {"row", "col"}}[lang][1]
	cases = []struct{ name, src, want string }{
		// Column 0 of rows 1..T−1: T−1 elements past the end.
		{"no row bound", edit("if (" + col + " < N) " + store), fmt.Sprintf("wrote %d elements past the end of C (rows 1–%d of a 1-row C)", tile-1, tile-1)},
		// Every (r, c) of the tile: indices r + c up to 2(T−1), all but 0 past the end.
		{"no bounds", edit(store), fmt.Sprintf("wrote %d elements past the end of C (rows 1–%d of a 1-row C)", 2*(tile-1), 2*(tile-1))},
		{"one before", edit("if (" + row + " < M && " + col + " < N) C[" + row + " * N + " + col + " - 1] = acc;"), "wrote 1 element before the start of C (row -1 of a 1-row C)"},
		{"into A", edit(guardedStore + "\n    if (" + row + " == 0 && " + col + " == 0) ((" + map[string]string{LangOpenCL: "__global float*", LangCUDA: "float*"}[lang] + ")A)[0] = 2.0f;"),
			"wrote into its input A: 1 element changed (A[0][0])"},
	}
	return tile, cases
}

// TestGuardZones: a kernel that writes outside its outputs fails, saying
// which array, on which side and which elements, with a picture
// (TestReferencePasses runs every reference solution with the zones). It
// runs the notebook's check, in this
// process: on PoCL such a write once crashed it (free(): invalid pointer).
func TestGuardZones(t *testing.T) {
	for _, lang := range []string{LangOpenCL, LangCUDA} {
		t.Run(lang, func(t *testing.T) {
			needForMistakes(t, lang)
			_, cases := strayKernels(t, lang)
			for _, tc := range cases {
				r := Run("gemm/tiled", tc.src)
				if r.Correct || !r.Compiled || r.Error != "wrote outside its outputs for M=1 N=1 K=1" || !strings.HasPrefix(r.Detail, tc.want) {
					t.Errorf("%s: correct=%v error %q detail %q, want %q", tc.name, r.Correct, r.Error, r.Detail, tc.want)
					continue
				}
				if r.Pictures == nil || r.Pictures.Stray == nil || len(r.Pictures.Stray.PNG) == 0 {
					t.Errorf("%s: no picture of the stray writes: %+v", tc.name, r.Pictures)
				}
				if md := r.Markdown(); !strings.Contains(md, "Where the kernel wrote outside its outputs") || !strings.Contains(md, "*Hint:*") {
					t.Errorf("%s: report:\n%s", tc.name, md)
				}
			}
		})
	}
}

// TestGuardReadsPoison: a kernel that reads past an input's end gets NaN
// from the guard zone, so the read cannot pass unnoticed by luck: here A
// is read without its bound on K, which reads the next row (wrong) and,
// past A's last row, the zone.
func TestGuardReadsPoison(t *testing.T) {
	needForMistakes(t, LangOpenCL)
	src := strings.Replace(mustOpenCL(t, "gemm/02_local_tiling"), "(m < M && ka < K) ? A[m*K + ka] : 0.0f", "m < M ? A[m*K + ka] : 0.0f", 1)
	src = strings.Replace(src, "(kb < K && n < N) ? B[kb*N + n] : 0.0f", "n < N ? B[kb*N + n] : 0.0f", 1)
	r := Run("gemm/tiled", src)
	if r.Correct || !strings.Contains(r.Detail, "expected") {
		t.Errorf("a kernel reading past A and B passed: %+v", r)
	}
}

// TestGuardedTask: the judge's guard zones are as long as the task's
// longest array, within bounds, and the runner's report round-trips
// through the judge's reading of it.
func TestGuardedTask(t *testing.T) {
	for _, tc := range []struct {
		n, want int
	}{{1, 4096}, {5000, 5120}, {1 << 20, 64 << 10}} {
		if got := guarded(wire.Task{Args: []any{3, make([]float32, tc.n), wire.Out(1)}}).Guard; got != tc.want {
			t.Errorf("n=%d: guard %d, want %d", tc.n, got, tc.want)
		}
	}
	p := gemmProblem{s: gemm.Shape{M: 2, N: 3, K: 1}, a: []float32{1, 2}, b: []float32{1, 2, 3}}
	task := guarded(wire.Task{Entry: "sgemm", Decl: gemm.CUDADecl("sgemm"), Args: []any{2, 3, 1, p.a, p.b, wire.Out(6)}})
	c := make([]uint32, 6)
	report := make([]uint32, 3*wire.DamageWords)
	report[2*wire.DamageWords+6], report[2*wire.DamageWords+7], report[2*wire.DamageWords+8] = 3, 0, 2
	out, found := strays(p, task, "", [][]uint32{c, report})
	if len(out) != 1 || len(found) != 1 || found[0].String() != "wrote 3 elements past the end of C (row 2 of a 2-row C)" {
		t.Errorf("outputs %d, strays %v", len(out), found)
	}
	if out, found := strays(p, task, "", [][]uint32{c}); len(out) != 1 || found != nil {
		t.Errorf("a run without zones (under the sanitizer) has no report: %d %v", len(out), found)
	}
	if math.Float32frombits(wire.GuardBits) == math.Float32frombits(wire.GuardBits) {
		t.Errorf("the guard bits are not a NaN")
	}
}
