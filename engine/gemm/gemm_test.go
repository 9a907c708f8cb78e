package gemm

import "testing"

// mustProblem parses size and draws a problem of that shape, or stops the test.
func mustProblem(t *testing.T, size string, seed uint64) *Problem {
	t.Helper()
	s, err := ParseShape(size)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProblem(s, seed)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
