package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCopies: lessons are copied once; a copy the student edited is never
// overwritten (and is named when its lesson changes); an unedited copy
// follows its lesson; checkpoints are not lessons.
func TestCopies(t *testing.T) {
	from, to := t.TempDir(), filepath.Join(t.TempDir(), "work")
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	write(filepath.Join(from, "00-a.ipynb"), "a1")
	write(filepath.Join(from, "exercises", "x.ipynb"), "x1")
	write(filepath.Join(from, ".ipynb_checkpoints", "00-a-checkpoint.ipynb"), "cp")
	r, err := syncCopies(from, to)
	if err != nil || !slices.Equal(r.Fresh, []string{"00-a.ipynb", filepath.Join("exercises", "x.ipynb")}) {
		t.Fatalf("first sync: %+v %v", r, err)
	}
	if read(filepath.Join(to, "exercises", "x.ipynb")) != "x1" {
		t.Error("not copied")
	}
	write(filepath.Join(to, "00-a.ipynb"), "a1 and my notes") // the student edits a
	write(filepath.Join(from, "00-a.ipynb"), "a2")            // both lessons change
	write(filepath.Join(from, "exercises", "x.ipynb"), "x2")
	r, err = syncCopies(from, to)
	if err != nil || !slices.Equal(r.Stale, []string{"00-a.ipynb"}) || !slices.Equal(r.Updated, []string{filepath.Join("exercises", "x.ipynb")}) {
		t.Fatalf("second sync: %+v %v", r, err)
	}
	if read(filepath.Join(to, "00-a.ipynb")) != "a1 and my notes" || read(filepath.Join(to, "exercises", "x.ipynb")) != "x2" {
		t.Error("an edit was lost, or an unedited copy did not follow its lesson")
	}
	os.Remove(filepath.Join(to, "00-a.ipynb")) // a fresh copy, as make lab says
	if r, err = syncCopies(from, to); err != nil || !slices.Equal(r.Fresh, []string{"00-a.ipynb"}) || read(filepath.Join(to, "00-a.ipynb")) != "a2" {
		t.Errorf("fresh copy: %+v %v", r, err)
	}
	code, stdout, errs := lab("copies", "--from", from, "--to", to)
	if code != 0 || !strings.Contains(stdout, "Your working copies of the lessons are in") {
		t.Errorf("exit %d: %s %s", code, stdout, errs)
	}
	write(filepath.Join(to, ".lessons.json"), "{not json")
	if _, err := syncCopies(from, to); err == nil || !strings.Contains(err.Error(), "delete it to start the copies afresh") {
		t.Errorf("a broken manifest: %v", err)
	}
}
