package bench

import (
	"slices"
	"strings"
)

// JoinAnd joins items as a sentence does: "a", "a and b", "a, b and c";
// with semicolons when an item has a comma of its own: "a, 1; b, 2; and c".
// Generated findings list variants, sizes and devices with it.
func JoinAnd(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	sep, last := ", ", " and "
	if slices.ContainsFunc(items, func(s string) bool { return strings.Contains(s, ",") }) {
		sep, last = "; ", "; and "
	}
	return strings.Join(items[:len(items)-1], sep) + last + items[len(items)-1]
}
