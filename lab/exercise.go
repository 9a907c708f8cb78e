package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"gpulab/engine/atomicfile"
	"gpulab/engine/exercise"
	"gpulab/engine/nb/jupyter"
)

// exerciseFillCmd writes a copy of an exercise notebook whose marked cell
// holds the reference solution between its backticks: `make test` runs the
// exercise notebooks that way, so their checks must pass.
func exerciseFillCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("exercise-fill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "where to write the filled notebook")
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: lab exercise-fill NOTEBOOK.ipynb --out FILLED.ipynb") }
	path, err := oneArg(fs, args, "notebook")
	if err != nil {
		return err
	}
	if *out == "" {
		return usageError{fmt.Errorf("--out is required")}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var nb map[string]any
	if err := json.Unmarshal(data, &nb); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	cells, _ := nb["cells"].([]any)
	filled := 0
	for _, c := range cells {
		cell, _ := c.(map[string]any)
		if cell["cell_type"] != "code" {
			continue
		}
		src := jupyter.Source(cell["source"])
		for _, name := range exercise.Names() {
			marker := "// EXERCISE " + name
			if !strings.Contains(src, marker) {
				continue
			}
			e, _ := exercise.Lookup(name)
			filled++
			if e.IsGo() { // the whole cell is the solution
				sol, err := e.Flavors[0].Solution()
				if err != nil {
					return err
				}
				cell["source"] = sol
				continue
			}
			old, err := exercise.Extract(src, name)
			if err != nil {
				return fmt.Errorf("%s: %v", path, err)
			}
			// The solution in the language of the cell's kernel.
			f, err := e.Flavor(exercise.Language(old))
			if err != nil {
				return fmt.Errorf("%s: the cell marked %s: %v", path, marker, err)
			}
			sol, err := f.Solution()
			if err != nil {
				return err
			}
			cell["source"] = strings.Replace(src, "`"+old+"`", "`"+sol+"`", 1)
		}
	}
	if filled == 0 {
		return fmt.Errorf("%s: no cell marked // EXERCISE <name> (have %s)", path, strings.Join(exercise.Names(), ", "))
	}
	b, err := json.MarshalIndent(nb, "", " ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(*out, b)
}
