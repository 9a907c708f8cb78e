package bench

import (
	"encoding/json"
	"testing"
)

func TestParamsNumber(t *testing.T) {
	measured := Params{"i": 32, "f": 0.25, "j": int64(7), "s": "x"}
	data, err := json.Marshal(measured)
	if err != nil {
		t.Fatal(err)
	}
	var readBack Params
	if err := json.Unmarshal(data, &readBack); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Params{measured, readBack} {
		for _, tc := range []struct {
			key  string
			want float64
			ok   bool
		}{{"i", 32, true}, {"f", 0.25, true}, {"j", 7, true}, {"s", 0, false}, {"missing", 0, false}} {
			if got, ok := p.Number(tc.key); got != tc.want || ok != tc.ok {
				t.Errorf("%v.Number(%q) = %v, %v; want %v, %v", p, tc.key, got, ok, tc.want, tc.ok)
			}
			if got := p.Float(tc.key); got != tc.want {
				t.Errorf("%v.Float(%q) = %v, want %v", p, tc.key, got, tc.want)
			}
		}
	}
}
