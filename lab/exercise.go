package main

import (
	"fmt"
	"io"
	"strings"

	"gpulab/engine/exercise"
	"gpulab/engine/nb/jupyter"
)

// exerciseFillCmd writes a copy of an exercise notebook whose marked cell
// holds the reference solution between its backticks: `make test` runs the
// exercise notebooks that way, so their checks must pass.
func exerciseFillCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("exercise-fill", stderr)
	out := fs.String("out", "", "where to write the filled notebook")
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: lab exercise-fill NOTEBOOK.ipynb --out FILLED.ipynb") }
	path, err := oneArg(fs, args, "notebook")
	if err != nil {
		return err
	}
	if *out == "" {
		return usageError{fmt.Errorf("--out is required")}
	}
	nb, err := jupyter.ReadNotebook(path)
	if err != nil {
		return err
	}
	filled := 0
	for _, cell := range nb.Code() {
		for _, name := range exercise.Names() {
			marker := "// EXERCISE " + name
			if !strings.Contains(cell.Source, marker) {
				continue
			}
			sol, err := filledCell(cell.Source, name)
			if err != nil {
				return fmt.Errorf("%s: the cell marked %s: %w", path, marker, err)
			}
			if err := nb.SetSource(cell.Number, sol); err != nil {
				return err
			}
			filled++
		}
	}
	if filled == 0 {
		return fmt.Errorf("%s: no cell marked // EXERCISE <name> (have %s)", path, strings.Join(exercise.Names(), ", "))
	}
	return nb.Write(*out)
}

// filledCell is the source of a cell marked // EXERCISE name with the
// reference solution in place of the student's: the whole cell for a Go
// exercise, else the kernel between the cell's backticks, in its language.
func filledCell(src, name string) (string, error) {
	e, err := exercise.Lookup(name)
	if err != nil {
		return "", err
	}
	if e.IsGo() {
		return e.Flavors[0].Solution()
	}
	old, err := exercise.Extract(src, name)
	if err != nil {
		return "", err
	}
	f, err := e.Flavor(exercise.Language(old))
	if err != nil {
		return "", err
	}
	sol, err := f.Solution()
	if err != nil {
		return "", err
	}
	return strings.Replace(src, "`"+old+"`", "`"+sol+"`", 1), nil
}
