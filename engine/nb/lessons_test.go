package nb

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpulab/engine/nb/jupyter"
)

// citedFigures is the allowlist of figures a lesson's prose may type: facts
// cited from a datasheet, a paper or a seed document, never a measurement.
// Each line reads "notebook | figure | source".
const citedFigures = "../../notebooks/cited-figures.txt"

// TestLessonsTypeNoMeasuredFigures scans the prose of every lesson and
// exercise: a figure that a run measures is printed by the cell that
// measured it, so the text never goes stale.
func TestLessonsTypeNoMeasuredFigures(t *testing.T) {
	cited := map[string]bool{}
	f, err := os.Open(citedFigures)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		parts := strings.Split(text, "|")
		if len(parts) != 3 || strings.TrimSpace(parts[2]) == "" {
			t.Fatalf("%s:%d: want \"notebook | figure | source\", got %q", citedFigures, line, text)
		}
		cited[strings.TrimSpace(parts[0])+"|"+strings.TrimSpace(parts[1])] = true
	}
	paths, _ := filepath.Glob("../../notebooks/*.ipynb")
	more, _ := filepath.Glob("../../notebooks/exercises/*.ipynb")
	paths = append(paths, more...)
	if len(paths) == 0 {
		t.Fatal("no notebooks under ../../notebooks")
	}
	for _, path := range paths {
		book, err := jupyter.ReadNotebook(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		for _, cell := range book.Markdown() {
			for _, fig := range MeasuredFigures(cell.Source) {
				if !cited[name+"|"+fig] {
					t.Errorf("%s cell %s types %q: print it from the run, or cite its source in %s",
						name, cell.ID, fig, filepath.Base(citedFigures))
				}
			}
		}
	}
}
