package kernelcard

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// counts writes the expected counts: class, total, then bytes:count pairs
// for the memory classes.
type want struct {
	class   string
	n       int
	byBytes map[int]int
}

func checkCounts(t *testing.T, what string, got []InstructionCount, wants []want) {
	t.Helper()
	var gotClasses, wantClasses []string
	for _, c := range got {
		gotClasses = append(gotClasses, c.Class)
	}
	for _, w := range wants {
		wantClasses = append(wantClasses, w.class)
	}
	if !slices.Equal(gotClasses, wantClasses) {
		t.Fatalf("%s: classes %q, want %q", what, gotClasses, wantClasses)
	}
	for i, w := range wants {
		if got[i].N != w.n || !reflect.DeepEqual(got[i].ByBytes, w.byBytes) {
			t.Errorf("%s: %s = %d %v, want %d %v", what, w.class, got[i].N, got[i].ByBytes, w.n, w.byBytes)
		}
	}
}

// TestCountPTX counts hand-written PTX (following the PTX ISA and NVRTC's
// layout): scalar and vector accesses of every space, predicated and
// labelled instructions, inline-asm scopes, comments (one with a
// semicolon), an instruction over two lines, cp.async with its commit
// and wait (which are not copies), tensor-core instructions, and a .func
// whose instructions belong to no kernel.
func TestCountPTX(t *testing.T) {
	smem := readFixture(t, "smem_tiling.ptx")
	mixed := readFixture(t, "mixed.ptx")
	for _, tc := range []struct {
		ptx, entry string
		want       []want
	}{
		{smem, "sgemm", []want{
			{"ld.global", 2, map[int]int{4: 2}}, {"st.global", 1, map[int]int{4: 1}},
			{"ld.shared", 4, map[int]int{4: 4}}, {"st.shared", 2, map[int]int{4: 2}},
			{"ld.local", 0, nil}, {"st.local", 0, nil}, {"fma", 2, nil}, {"bar", 2, nil},
		}},
		{mixed, "copy_tile", []want{
			{"ld.global", 1, map[int]int{16: 1}}, {"st.global", 2, map[int]int{16: 1, 2: 1}},
			{"ld.shared", 2, map[int]int{16: 1, 8: 1}}, {"st.shared", 1, map[int]int{16: 1}},
			{"ld.local", 2, map[int]int{16: 1, 4: 1}}, {"st.local", 1, map[int]int{16: 1}},
			{"fma", 2, nil}, {"cp.async", 1, map[int]int{16: 1}}, {"atom/red", 1, nil}, {"bar", 1, nil},
		}},
		{mixed, "mma_tile", []want{
			{"ld.global", 0, nil}, {"st.global", 0, nil}, {"ld.shared", 1, map[int]int{4: 1}}, {"st.shared", 0, nil},
			{"ld.local", 0, nil}, {"st.local", 0, nil}, {"fma", 0, nil}, {"ldmatrix", 1, nil}, {"mma", 2, nil},
		}},
	} {
		got, err := CountPTX(tc.ptx, tc.entry)
		if err != nil {
			t.Fatalf("%s: %v", tc.entry, err)
		}
		checkCounts(t, tc.entry, got, tc.want)
	}
	if got := PTXEntries(mixed); !slices.Equal(got, []string{"copy_tile", "mma_tile"}) {
		t.Errorf("entries %q: the .func helper is no kernel", got)
	}
	if _, err := CountPTX(mixed, "sgemm"); err == nil || !strings.Contains(err.Error(), "copy_tile, mma_tile") {
		t.Errorf("an unknown kernel: %v, want the kernels listed", err)
	}
	fn, err := PTXFunction(mixed, "copy_tile")
	if err != nil || !strings.HasPrefix(fn, ".visible .entry copy_tile(") || !strings.HasSuffix(fn, "ret;\n\n}") || strings.Contains(fn, "mma_tile") {
		t.Errorf("copy_tile's text (%v):\n%s", err, fn)
	}
	if _, err := PTXFunction(".visible .entry broken(\n)\n{\n\tret;\n", "broken"); err == nil || !strings.Contains(err.Error(), "never closes") {
		t.Errorf("a body that never closes: %v", err)
	}
}

// TestCountSASS counts cuobjdump's and nvdisasm's listings: predicated
// instructions, widths from the opcode's modifiers, and functions told
// apart.
func TestCountSASS(t *testing.T) {
	fns := SASSFunctions(readFixture(t, "cuobjdump.sass"))
	if len(fns) != 2 {
		t.Fatalf("cuobjdump: functions %v, want sgemm and pad_cols", len(fns))
	}
	checkCounts(t, "cuobjdump sgemm", CountSASS(fns["sgemm"]), []want{
		{"LDG", 2, map[int]int{16: 1, 4: 1}}, {"STG", 1, map[int]int{4: 1}}, {"LDS", 2, map[int]int{4: 1, 8: 1}},
		{"STS", 1, map[int]int{16: 1}}, {"LDL", 1, map[int]int{4: 1}}, {"STL", 1, map[int]int{4: 1}},
		{"FFMA", 2, nil}, {"LDGSTS", 1, map[int]int{16: 1}}, {"BAR", 1, nil},
	})
	padCols := []want{
		{"LDG", 1, map[int]int{2: 1}}, {"STG", 1, map[int]int{2: 1}}, {"LDS", 0, nil}, {"STS", 0, nil},
		{"LDL", 0, nil}, {"STL", 0, nil}, {"FFMA", 0, nil},
	}
	checkCounts(t, "cuobjdump pad_cols", CountSASS(fns["pad_cols"]), padCols)
	nv := SASSFunctions(readFixture(t, "nvdisasm.sass"))
	if _, ok := nv["pad_cols"]; !ok || len(nv) != 1 {
		t.Fatalf("nvdisasm: functions %v, want pad_cols alone", len(nv))
	}
	checkCounts(t, "nvdisasm pad_cols", CountSASS(nv["pad_cols"]), padCols)
}

func TestInstructionCountString(t *testing.T) {
	for _, tc := range []struct {
		c    InstructionCount
		want string
	}{
		{InstructionCount{Class: "ld.global", N: 6, ByBytes: map[int]int{4: 2, 16: 4}}, "ld.global 6 (4×16 B, 2×4 B)"},
		{InstructionCount{Class: "fma", N: 64}, "fma 64"},
		{InstructionCount{Class: "ld.local"}, "ld.local 0"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

// TestHotLoop finds the loop a backward branch closes, in PTX (labels)
// and in cuobjdump's SASS (addresses), skipping forward branches and a
// branch to itself (the trap after EXIT).
func TestHotLoop(t *testing.T) {
	ptx, err := PTXFunction(readFixture(t, "smem_tiling.ptx"), "sgemm")
	if err != nil {
		t.Fatal(err)
	}
	sass := SASSFunctions(readFixture(t, "cuobjdump.sass"))["sgemm"]
	for _, tc := range []struct {
		name, fn, first, last string
		fmas                  int
	}{
		{"PTX", ptx, "$L__BB0_2:", "bra \t$L__BB0_2;", 2},
		{"SASS", sass, "/*0060*/", "@P2 BRA 0x60", 2},
	} {
		loop, ok := HotLoop(tc.fn)
		lines := strings.Split(tc.fn, "\n")
		if !ok || !strings.Contains(lines[loop.First], tc.first) || !strings.Contains(lines[loop.Last], tc.last) || loop.FMAs != tc.fmas {
			t.Errorf("%s: loop %+v (%v): %q … %q", tc.name, loop, ok, lines[loop.First], lines[loop.Last])
		}
	}
	if _, ok := HotLoop(SASSFunctions(readFixture(t, "cuobjdump.sass"))["pad_cols"]); ok {
		t.Error("pad_cols has no loop")
	}
}

// TestListing: a short function is shown whole; a long one shows its
// hot loop, or its start when it has none, cut to maxListingLines.
func TestListing(t *testing.T) {
	setup := strings.Repeat("\tadd.s32 %r1, %r1, 1;\n", 50)
	loop := "$L__BB0_1:\n" + strings.Repeat("\tfma.rn.f32 %f1, %f2, %f3, %f1;\n", 8) + "\t@%p1 bra $L__BB0_1;\n"
	tail := strings.Repeat("\tst.global.f32 [%rd1], %f1;\n", 200)
	for _, tc := range []struct {
		text, what, first string
		n                 int
	}{
		{"\tret;\n", "all 1 line", "\tret;", 1},
		{setup + loop + tail, "the loop with the most FMAs (lines 51–60 of 260)", "$L__BB0_1:", 10},
		{setup + tail, "the first 100 of 250 lines", "\tadd.s32 %r1, %r1, 1;", maxListingLines},
	} {
		what, shown := listing(tc.text)
		lines := strings.Split(shown, "\n")
		if what != tc.what || lines[0] != tc.first || len(lines) != tc.n {
			t.Errorf("%q, %d lines from %q; want %q, %d from %q", what, len(lines), lines[0], tc.what, tc.n, tc.first)
		}
	}
}
