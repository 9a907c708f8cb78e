package lfm2

import (
	"strings"
	"testing"
)

// TestParts8B: LFM2-8B-A1B has 8.34 B parameters, of which 1.56 B are
// active per token (4 of 32 experts), the "8B-A1B" of its name; each part
// as worked out from the shapes.
func TestParts8B(t *testing.T) {
	c, err := Preset("lfm2-8b-a1b")
	if err != nil {
		t.Fatal(err)
	}
	const h, hd, kv, q = 2048, 64, 8 * 64, 32 * 64
	expert := int64(3 * 1792 * h)
	want := map[string][3]int64{ // layers, total, active
		"embedding":  {0, 65536 * h, 65536 * h},
		"attention":  {6, 6 * (2*q*h + 2*kv*h + 2*hd), 6 * (2*q*h + 2*kv*h + 2*hd)},
		"short conv": {18, 18 * (3*h*h + 3*h + h*h), 18 * (3*h*h + 3*h + h*h)},
		"dense FFN":  {2, 2 * 3 * 7168 * h, 2 * 3 * 7168 * h},
		"router":     {22, 22 * (32*h + 32), 22 * (32*h + 32)},
		"experts":    {22, 22 * 32 * expert, 22 * 4 * expert},
		"norms":      {24, 2*24*h + h, 2*24*h + h},
	}
	var total, active int64
	parts := Parts(c)
	for _, p := range parts {
		w, ok := want[p.Name]
		if !ok || int64(p.Layers) != w[0] || p.Total != w[1] || p.Active != w[2] {
			t.Errorf("%s: %d layers, %d total, %d active; want %v", p.Name, p.Layers, p.Total, p.Active, w)
		}
		total, active = total+p.Total, active+p.Active
	}
	if len(parts) != len(want) || total != 8_339_930_560 || active != 1_557_740_992 {
		t.Errorf("%d parts, %d total, %d active", len(parts), total, active)
	}
	if _, err := Preset("gpt-5"); err == nil || !strings.Contains(err.Error(), "lfm2-8b-a1b") {
		t.Errorf("unknown preset: %v", err)
	}
}
