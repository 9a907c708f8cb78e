package exercise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/tools/go/ast/astutil"
)

// A Go exercise's code is judged by what its names resolve to, not by how
// they are spelt: the file is type-checked against the export data of the
// packages it imports, so the library's answer is refused however it is
// reached (an import under any name or several, a dot import, a function
// value, a method of one of its types, an alias declared in the cell).

// sparsePath is the package whose types a Go exercise may use and whose
// answers (Exercise.Forbidden) it may not.
const sparsePath = "gpulab/engine/sparse"

// InspectGoFile reads the file that a Go exercise's build compiles (the
// cell as goimports completed it, whose imports may be more than the
// cell's) without building it: it must not import what the exercise does
// not allow ("C" included: the build has no cgo, and would leave the file
// out) or use the library's own implementation of the exercise
// (e.Forbidden), however reached. A file that does not parse is left to
// the compiler, which says where. Type-checking needs the go command, run
// in $GPULAB_ROOT (else the current directory), for the export data of
// the file's imports; without it the file is refused, not passed.
func (e Exercise) InspectGoFile(src []byte) error {
	if !e.IsGo() {
		return fmt.Errorf("%s is a kernel exercise", e.Name)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "student.go", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	return e.inspectFile(fset, f, string(src))
}

// inspectFile is InspectGoFile and InspectGo's check of f, parsed from
// src: its imports, then the objects its names resolve to.
func (e Exercise) inspectFile(fset *token.FileSet, f *ast.File, src string) error {
	if strings.Contains(src, "//go:linkname") {
		return fmt.Errorf("your code has a //go:linkname directive, which this exercise does not allow")
	}
	var paths []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case path == "unsafe" || path == "reflect" || path == "plugin":
			return fmt.Errorf("your code imports %q, which this exercise does not allow", path)
		case path == "gpulab" || strings.HasPrefix(path, "gpulab/") && path != sparsePath:
			return fmt.Errorf("your code imports %q: this exercise allows the standard library and %s (its types)", path, sparsePath)
		case path == "C": // the build, without cgo, would leave the file out: "undefined: Gustavson"
			return fmt.Errorf("your code imports \"C\" on line %d: cgo is not allowed in a cell (it is built without a C compiler): write the exercise in Go", fset.Position(imp.Pos()).Line)
		case !slices.Contains(paths, path):
			paths = append(paths, path)
		}
	}
	dir := os.Getenv("GPULAB_ROOT")
	found, err := exportFiles(dir, paths)
	if err != nil {
		return fmt.Errorf("cannot inspect your code: %v", err)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return openExport(dir, path) })
	// Without package sparse its names would resolve to nothing, and
	// nothing would be refused. Other imports that cannot be had fail the
	// build anyway, and reach no gpulab package. The importer keeps what
	// it imported for the check.
	if err, ok := found[sparsePath]; ok {
		if err == nil {
			_, err = imp.Import(sparsePath)
		}
		if err != nil {
			return fmt.Errorf("cannot inspect your code: %v (inspecting Go code needs the gpulab checkout: run in it or set GPULAB_ROOT)", err)
		}
	}
	info := &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
		Instances:  map[*ast.Ident]types.Instance{},
	}
	conf := types.Config{
		Importer: imp,
		Sizes:    types.SizesFor("gc", runtime.GOARCH),
		// Type errors are the compiler's to report, with their lines; the
		// names that do resolve are still recorded.
		Error: func(error) {},
	}
	conf.Check("main", fset, []*ast.File{f}, info)
	if name := e.forbiddenUse(info); name != "" {
		return fmt.Errorf("your code uses sparse.%s, the library's own implementation of this exercise: write the algorithm yourself", name)
	}
	return nil
}

// forbiddenUse names the first (by position) forbidden thing that info
// records the file using: a Forbidden object of package sparse, a method
// or field of a Forbidden type, else a value of that type (whose methods
// an interface or a type parameter would call unnamed). It is "" if none.
func (e Exercise) forbiddenUse(info *types.Info) string {
	type use struct {
		value bool // a value or type, not a name: said only if no name is
		pos   token.Pos
		name  string
	}
	var first *use
	add := func(u use) {
		if u.name == "" {
			return
		}
		if first == nil || !u.value && first.value || u.value == first.value && (u.pos < first.pos || u.pos == first.pos && u.name < first.name) {
			first = &u
		}
	}
	for id, obj := range info.Uses {
		add(use{false, id.Pos(), e.forbiddenObject(obj)})
	}
	for sel, s := range info.Selections {
		add(use{false, sel.Sel.Pos(), e.forbiddenObject(s.Obj())})
		t := s.Recv()
		add(use{true, sel.Pos(), e.forbiddenType(t)})
		// The embedded fields that the selection goes through.
		for _, i := range s.Index()[:len(s.Index())-1] {
			st, ok := deref(t).Underlying().(*types.Struct)
			if !ok || i >= st.NumFields() {
				break
			}
			t = st.Field(i).Type()
			add(use{true, sel.Sel.Pos(), e.forbiddenType(t)})
		}
	}
	for x, tv := range info.Types {
		add(use{true, x.Pos(), e.forbiddenType(tv.Type)})
	}
	for id, inst := range info.Instances {
		for i := range inst.TypeArgs.Len() {
			add(use{true, id.Pos(), e.forbiddenType(inst.TypeArgs.At(i))})
		}
	}
	if first == nil {
		return ""
	}
	return first.name
}

// forbiddenObject names obj if it is one of package sparse's Forbidden
// names ("Gustavson") or a method of a Forbidden type ("GPUSpGEMM.Close"),
// else "".
func (e Exercise) forbiddenObject(obj types.Object) string {
	if obj == nil || obj.Pkg() == nil || obj.Pkg().Path() != sparsePath {
		return ""
	}
	switch o := obj.(type) {
	case *types.Func:
		obj = o.Origin()
		if recv := o.Origin().Signature().Recv(); recv != nil {
			if t := e.forbiddenType(recv.Type()); t != "" {
				return t + "." + o.Name()
			}
			return ""
		}
	case *types.Var:
		obj = o.Origin()
	}
	if obj.Pkg().Scope().Lookup(obj.Name()) == obj && slices.Contains(e.Forbidden, obj.Name()) {
		return obj.Name()
	}
	return ""
}

// forbiddenType names t's type if t is, or points to, a Forbidden type of
// package sparse, else "".
func (e Exercise) forbiddenType(t types.Type) string {
	if n, ok := deref(t).(*types.Named); ok {
		return e.forbiddenObject(n.Origin().Obj())
	}
	return ""
}

// deref is t without aliases and one pointer.
func deref(t types.Type) types.Type {
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		return types.Unalias(p.Elem())
	}
	return t
}

// exports holds, per checkout and import path, the file of the package's
// export data that go list -export named: the first inspection may
// compile, the later ones only read.
var exports = struct {
	sync.Mutex
	files map[[2]string]string
}{files: map[[2]string]string{}}

// exportFiles finds the export data of paths for the checkout in dir ("":
// the current directory), running the go command for those not known yet.
// found maps each path to nil or what go list said of it; err is the go
// command's own failure.
func exportFiles(dir string, paths []string) (found map[string]error, err error) {
	exports.Lock()
	defer exports.Unlock()
	found = map[string]error{}
	var missing []string
	for _, p := range paths {
		if _, ok := exports.files[[2]string{dir, p}]; ok {
			found[p] = nil
		} else {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return found, nil
	}
	// As the build sees them: no cgo, no network, this toolchain, the
	// checkout's own go.mod.
	cmd := exec.Command("go", append([]string{"list", "-e", "-export", "-json=ImportPath,Export,Error", "--"}, missing...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%v: %s", err, msg)
		}
		return nil, fmt.Errorf("go list -export: %v", err)
	}
	for _, p := range missing {
		found[p] = fmt.Errorf("go list -export says nothing of %q", p)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var pkg struct {
			ImportPath, Export string
			Error              *struct{ Err string }
		}
		if err := dec.Decode(&pkg); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list -export: %v", err)
		}
		switch {
		case pkg.Error != nil:
			found[pkg.ImportPath] = errors.New(pkg.Error.Err)
		case pkg.Export == "":
			found[pkg.ImportPath] = fmt.Errorf("go list -export has no export data for %q", pkg.ImportPath)
		default:
			exports.files[[2]string{dir, pkg.ImportPath}] = pkg.Export
			found[pkg.ImportPath] = nil
		}
	}
	return found, nil
}

// openExport opens the export data of path, asking the go command again
// once if the build cache no longer has the file it named.
func openExport(dir, path string) (io.ReadCloser, error) {
	for range 2 {
		found, err := exportFiles(dir, []string{path})
		if err != nil {
			return nil, err
		}
		if err := found[path]; err != nil {
			return nil, err
		}
		exports.Lock()
		file := exports.files[[2]string{dir, path}]
		exports.Unlock()
		r, err := os.Open(file)
		if err == nil {
			return r, nil
		}
		exports.Lock()
		delete(exports.files, [2]string{dir, path})
		exports.Unlock()
	}
	return nil, fmt.Errorf("the export data of %q keeps vanishing from the build cache", path)
}

// withSparse is cell as a file of package main that imports package
// sparse by its name, as lab's build writes it before goimports.
func withSparse(cell string) (*token.FileSet, *ast.File, error) {
	fset := token.NewFileSet()
	// The line directive numbers the cell's lines from 1, as the student sees them.
	f, err := parser.ParseFile(fset, "cell.go", "package main\n\n//line cell.go:1\n"+cell, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	astutil.AddImport(fset, f, sparsePath)
	return fset, f, nil
}
