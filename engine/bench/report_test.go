package bench

import (
	"slices"
	"testing"
)

func TestSplitList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"64M, 1G", []string{"64M", "1G"}},
		{" ,a,, b ,", []string{"a", "b"}},
		{"uniform:n=64,k=4, 1G", []string{"uniform:n=64,k=4", "1G"}},
		{"rmat:scale=16,ef=8,a=0.57,b=0.19,c=0.19,poisson:k=9", []string{"rmat:scale=16,ef=8,a=0.57,b=0.19,c=0.19", "poisson:k=9"}},
		{"x=1,y=2", []string{"x=1", "y=2"}}, // no colon before: separate items
		{"", nil},
	} {
		if got := SplitList(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("SplitList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
