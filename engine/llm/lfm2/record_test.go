package lfm2

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadBenchRecord(t *testing.T) {
	r, err := ReadBenchRecord(filepath.Join("..", "..", "..", "docs", "results", "h200-lfm2-bf16.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Commit == "" || r.Device == "" || r.Batch != 1024 || r.Seq != 32 || r.SamplesPerSec <= 0 || r.PrefillMS <= 0 {
		t.Errorf("record header: commit %q device %q batch %d seq %d, %g samples/s, %g ms", r.Commit, r.Device, r.Batch, r.Seq, r.SamplesPerSec, r.PrefillMS)
	}
	if len(r.PrefillOps) == 0 || r.PrefillOps[0].Name == "" || r.PrefillOps[0].Calls <= 0 || r.PrefillOps[0].MS <= 0 {
		t.Errorf("prefill ops: %+v", r.PrefillOps)
	}
	if len(r.Decode) == 0 || r.Decode[0].Steps <= 0 || r.Decode[0].TokensPerSec <= 0 || len(r.Decode[0].StepOps) == 0 {
		t.Errorf("decode: %+v", r.Decode)
	}
}

func TestReadBenchRecordErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"batch": "many"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(dir, "missing.json")} {
		if _, err := ReadBenchRecord(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadBenchRecord(%s) = %v, want an error naming the file", path, err)
		}
	}
}

func TestOpTimes(t *testing.T) {
	if got := OpTimes(nil); got != nil {
		t.Errorf("OpTimes(nil) = %v, want nil", got)
	}
	got := OpTimes(&Profile{Kernels: []KernelTime{{Name: "router", Calls: 8, Time: 1500000}}})
	if len(got) != 1 || got[0] != (OpTime{Name: "router", Calls: 8, MS: 1.5}) {
		t.Errorf("OpTimes = %+v, want router, 8 calls, 1.5 ms", got)
	}
}
