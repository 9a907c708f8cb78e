package sparse

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestRecordedPhases: each recorded `lab sparse phases` run holds its
// device, commit and date (its tables' caption), its matrix and the
// phases of cuSPARSE and of at least one step, exactly as lab writes them.
func TestRecordedPhases(t *testing.T) {
	paths, _ := filepath.Glob("../../docs/results/*-spgemm-phases-*.json")
	if len(paths) == 0 {
		t.Fatal("no recorded phases")
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var run PhasesRun
		if err := dec.Decode(&run); err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if _, err := run.Caption("lab sparse phases"); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		if _, err := StepStats(run.Steps, "cusparse"); err != nil || len(run.Steps) < 2 || Label(run.Matrix) == run.Matrix {
			t.Errorf("%s: matrix %q, %d steps (%v)", path, run.Matrix, len(run.Steps), err)
		}
		again, _ := json.MarshalIndent(run, "", "  ")
		if !bytes.Equal(append(again, '\n'), data) {
			t.Errorf("%s is not as lab sparse phases --json writes it", path)
		}
	}
}
