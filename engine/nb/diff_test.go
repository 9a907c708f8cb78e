package nb

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj"
	new := "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk"
	got := Diff("old.cu", old, "new.cu", new)
	want := `--- old.cu
+++ new.cu
@@ -1,10 +1,11 @@
 a
 b
 c
-d
+D
 e
 f
 g
 h
 i
 j
+k
`
	if got != want {
		t.Errorf("Diff =\n%s\nwant\n%s", got, want)
	}
	far := Diff("o", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12", "n", "x\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ny")
	if strings.Count(far, "@@ -") != 2 || !strings.Contains(far, "@@ -1,4 +1,4 @@") || !strings.Contains(far, "@@ -9,4 +9,4 @@") {
		t.Errorf("changes 10 lines apart should make two hunks:\n%s", far)
	}
	if d := Diff("x", "same\n", "y", "same\n"); strings.Contains(d, "@@") {
		t.Errorf("identical texts gave hunks:\n%s", d)
	}
}
