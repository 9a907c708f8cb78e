package exercise

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needGo skips a test that type-checks Go code: the export data of its
// imports comes from the go command.
func needGo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command: inspecting Go code needs its export data")
	}
}

// gustavsonHead is the marked cell's first lines, as the notebook shows
// them; sp rewrites its package name.
const gustavsonHead = "// EXERCISE sparse/gustavson: complete the function.\nfunc Gustavson(a, b *sparse.CSR) (*sparse.CSR, error) {\n"

func headAs(name string) string {
	if name == "" {
		return strings.ReplaceAll(gustavsonHead, "sparse.", "")
	}
	return strings.ReplaceAll(gustavsonHead, "sparse.", name+".")
}

// TestInspectGoRoutes: every route to the library's answer that the type
// checker can resolve is refused, in the cell and in the file goimports
// completed, and names spelt like the library's that are not are let be.
func TestInspectGoRoutes(t *testing.T) {
	needGo(t)
	e, _ := Lookup("sparse/gustavson")
	// Forbid the type alone, as if its constructor were allowed: then a
	// value of it is reached without naming it.
	typeOnly := e
	typeOnly.Forbidden = []string{"GPUSpGEMM"}
	const file = "package main\n\nimport (\n\t%s\n)\n\n"
	for _, tc := range []struct {
		name string
		e    Exercise
		cell string // a cell for InspectGo
		file string // else a whole file for InspectGoFile
		want string // "" passes
	}{
		{name: "own solution", cell: gustavsonSolution},
		{name: "two names", cell: "import (\n\tsp \"gpulab/engine/sparse\"\n\tsq \"gpulab/engine/sparse\"\n)\n\n" + headAs("sq") + "\treturn sp.GustavsonParallel(a, b)\n}\n",
			want: "uses sparse.GustavsonParallel,"},
		{name: "plain and alias", cell: "import (\n\t\"gpulab/engine/sparse\"\n\ts \"gpulab/engine/sparse\"\n)\n\n" + gustavsonHead + "\treturn s.DenseAccumulator(a, b)\n}\n",
			want: "uses sparse.DenseAccumulator,"},
		{name: "dot import", cell: "import . \"gpulab/engine/sparse\"\n\n" + headAs("") + "\treturn DenseAccumulator(a, b)\n}\n",
			want: "uses sparse.DenseAccumulator,"},
		{name: "function value", cell: "var impls = map[string]func(a, b *sparse.CSR) (*sparse.CSR, error){\"mine\": sparse.Gustavson}\n\n" + gustavsonHead + "\treturn impls[\"mine\"](a, b)\n}\n",
			want: "uses sparse.Gustavson,"},
		{name: "func-typed var passed around", cell: "var impl func(a, b *sparse.CSR) (*sparse.CSR, error) = sparse.OuterProduct\n\n" +
			"func run(f func(a, b *sparse.CSR) (*sparse.CSR, error), a, b *sparse.CSR) (*sparse.CSR, error) { return f(a, b) }\n\n" +
			gustavsonHead + "\treturn run(impl, a, b)\n}\n",
			want: "uses sparse.OuterProduct,"},
		{name: "method value", cell: gustavsonHead + "\tclose := sparse.NewGPUSpGEMM(nil).Close\n\tclose()\n\treturn nil, nil\n}\n",
			want: "uses sparse.NewGPUSpGEMM,"},
		{name: "method value, type forbidden", e: typeOnly, cell: gustavsonHead + "\tclose := sparse.NewGPUSpGEMM(nil).Close\n\tclose()\n\treturn nil, nil\n}\n",
			want: "uses sparse.GPUSpGEMM"},
		{name: "method expression", cell: gustavsonHead + "\t(*sparse.GPUSpGEMM).Close(nil)\n\treturn nil, nil\n}\n",
			want: "uses sparse.GPUSpGEMM,"},
		{name: "interface call, type forbidden", e: typeOnly, cell: "type closer interface{ Close() }\n\n" + gustavsonHead + "\tvar c closer = sparse.NewGPUSpGEMM(nil)\n\tc.Close()\n\treturn nil, nil\n}\n",
			want: "uses sparse.GPUSpGEMM,"},
		{name: "local alias", cell: "type g = sparse.GPUSpGEMM\n\n" + gustavsonHead + "\tvar x *g\n\tx.Close()\n\treturn nil, nil\n}\n",
			want: "uses sparse.GPUSpGEMM,"},
		{name: "local named type", cell: "type g sparse.GPUSpGEMM\n\n" + gustavsonHead + "\tvar x g\n\t_ = x\n\treturn nil, nil\n}\n",
			want: "uses sparse.GPUSpGEMM,"},
		{name: "embedding", cell: "type wrap struct{ *sparse.GPUSpGEMM }\n\n" + gustavsonHead + "\tvar w wrap\n\tw.Close()\n\treturn nil, nil\n}\n",
			want: "uses sparse.GPUSpGEMM,"},
		{name: "generic instantiation", cell: "func call[F ~func(a, b *sparse.CSR) (*sparse.CSR, error)](f F, a, b *sparse.CSR) (*sparse.CSR, error) { return f(a, b) }\n\n" +
			gustavsonHead + "\treturn call(sparse.GustavsonParallel, a, b)\n}\n",
			want: "uses sparse.GustavsonParallel,"},
		{name: "type argument", cell: "func zero[T any]() (t T) { return t }\n\n" + gustavsonHead + "\t_ = zero[*sparse.GPUSpGEMM]()\n\treturn nil, nil\n}\n",
			want: "uses sparse.GPUSpGEMM,"},
		{name: "local variable named sparse", cell: "type impl struct{ Gustavson func(a, b *sparse.CSR) (*sparse.CSR, error) }\n\n" +
			"func mine(a, b *sparse.CSR) (*sparse.CSR, error) { return &sparse.CSR{Rows: a.Rows, Cols: b.Cols, RowPtr: make([]int32, a.Rows+1)}, nil }\n\n" +
			gustavsonHead + "\tsparse := impl{Gustavson: mine}\n\treturn sparse.Gustavson(a, b)\n}\n"},
		{name: "a field of the cell's own spelt like the library's", cell: "type acc struct{ DenseAccumulator []float32 }\n\n" +
			gustavsonHead + "\tvar x acc\n\t_ = x.DenseAccumulator\n\treturn nil, nil\n}\n"},
		{name: "an undefined name is the compiler's", cell: gustavsonHead + "\treturn nil, undefinedThing\n}\n"},
		{name: "goimports added a gpulab import", file: strings.Replace(file, "%s", "\"gpulab/engine/exercise\"\n\t\"gpulab/engine/sparse\"", 1) +
			"var _ = exercise.Names\n\n" + gustavsonSolution, want: `imports "gpulab/engine/exercise": this exercise allows`},
		{name: "goimports completed the file", file: strings.Replace(file, "%s", "\"fmt\"\n\n\t\"gpulab/engine/sparse\"", 1) + gustavsonSolution},
		{name: "file with two names", file: strings.Replace(file, "%s", "\"gpulab/engine/sparse\"\n\tsp \"gpulab/engine/sparse\"", 1) +
			gustavsonHead + "\treturn sp.Gustavson(a, b)\n}\n", want: "uses sparse.Gustavson,"},
		{name: "file importing unsafe", file: strings.Replace(file, "%s", "\"unsafe\"", 1) + "var _ unsafe.Pointer\n", want: `imports "unsafe"`},
		{name: "cgo", cell: "import \"C\"\n\n" + gustavsonHead + "\treturn nil, nil\n}\n", want: `your code imports "C" on line 1: cgo is not allowed`},
		{name: "cgo with a preamble", cell: "// #include <stdlib.h>\nimport \"C\"\n\n" + gustavsonHead + "\treturn nil, nil\n}\n", want: `imports "C" on line 2: cgo`},
		{name: "file with cgo", file: strings.Replace(file, "%s", "\"C\"\n\t\"gpulab/engine/sparse\"", 1) + gustavsonSolution, want: `imports "C" on line 4: cgo`},
		{name: "file with a linkname", file: strings.Replace(file, "%s", "_ \"unsafe\"", 1) + "//go:linkname g gpulab/engine/sparse.Gustavson\nfunc g()\n", want: "go:linkname"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := e
			if tc.e.Name != "" {
				x = tc.e
			}
			var err error
			if tc.file != "" {
				err = x.InspectGoFile([]byte(tc.file))
			} else {
				err = x.InspectGo(tc.cell)
			}
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("%v, want %q for\n%s%s", err, tc.want, tc.cell, tc.file)
			}
		})
	}
}

// TestInspectGoFailsClosed: without the export data of package sparse
// (no checkout, no go command, data the importer cannot read) a cell is
// refused, not passed: its names would resolve to nothing.
func TestInspectGoFailsClosed(t *testing.T) {
	needGo(t)
	e, _ := Lookup("sparse/gustavson")
	cell := gustavsonHead + "\treturn sparse.Gustavson(a, b)\n}\n"
	t.Setenv("GPULAB_ROOT", t.TempDir()) // not a checkout
	if err := e.InspectGo(cell); err == nil || !strings.Contains(err.Error(), "cannot inspect your code") || !strings.Contains(err.Error(), "GPULAB_ROOT") {
		t.Errorf("outside a checkout: %v", err)
	}
	// Export data that the importer cannot read.
	root := t.TempDir()
	t.Setenv("GPULAB_ROOT", root)
	bad := filepath.Join(root, "sparse.a")
	if err := os.WriteFile(bad, []byte("not export data"), 0o644); err != nil {
		t.Fatal(err)
	}
	exports.Lock()
	exports.files[[2]string{root, sparsePath}] = bad
	exports.Unlock()
	if err := e.InspectGo(cell); err == nil || !strings.Contains(err.Error(), "cannot inspect your code") {
		t.Errorf("with unreadable export data: %v", err)
	}
	t.Setenv("GPULAB_ROOT", t.TempDir())
	t.Setenv("PATH", t.TempDir()) // no go command
	if err := e.InspectGo(gustavsonSolution); err == nil || !strings.Contains(err.Error(), "cannot inspect your code") {
		t.Errorf("without the go command: %v", err)
	}
}

// TestInspectGoFileFast: once the export data is known, an inspection
// runs no go command (each run of which costs seconds).
func TestInspectGoFileFast(t *testing.T) {
	needGo(t)
	e, _ := Lookup("sparse/gustavson")
	file := []byte("package main\n\nimport (\n\t\"fmt\"\n\n\t\"gpulab/engine/sparse\"\n)\n\n" + gustavsonSolution)
	if err := e.InspectGoFile(file); err != nil {
		t.Fatal(err)
	}
	// The export data is known now: a later inspection needs no go
	// command, however long one would take on this machine.
	t.Setenv("PATH", t.TempDir())
	if err := e.InspectGoFile(file); err != nil {
		t.Errorf("a later inspection ran the go command: %v", err)
	}
}
