package bench

import "testing"

func TestJoinAnd(t *testing.T) {
	for _, tc := range []struct {
		items []string
		want  string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b"}, "a and b"},
		{[]string{"a", "b", "c"}, "a, b and c"},
		{[]string{"a, 1", "b, 2", "c"}, "a, 1; b, 2; and c"},
	} {
		if got := JoinAnd(tc.items); got != tc.want {
			t.Errorf("JoinAnd(%q) = %q, want %q", tc.items, got, tc.want)
		}
	}
}
