// Package enginetest holds test helpers for packages that use engine.
package enginetest

import (
	"errors"
	"strings"
	"testing"

	"gpulab/engine"
)

// WantMemoryError fails the test unless err is, or wraps, an
// *engine.MemoryError whose need is need bytes, more than what it says is
// available, and whose message holds every one of wants.
func WantMemoryError(t testing.TB, err error, need uint64, wants ...string) {
	t.Helper()
	var me *engine.MemoryError
	if !errors.As(err, &me) {
		t.Errorf("error %v, want an *engine.MemoryError of %d bytes", err, need)
		return
	}
	if me.Need != need || me.Available >= me.Need {
		t.Errorf("%v: need %d, available %d; want a need of %d over what is available", err, me.Need, me.Available, need)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}
