package bench

// Number reads a numeric parameter: an int when the record was just
// measured, a float64 when it was read back from JSON. ok is false when the
// parameter is missing or not a number.
func (p Params) Number(key string) (v float64, ok bool) {
	switch x := p[key].(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Float is Number without the ok: 0 when the parameter is missing.
func (p Params) Float(key string) float64 {
	v, _ := p.Number(key)
	return v
}
