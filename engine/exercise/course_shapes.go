package exercise

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpulab/engine/exercise/wire"
	"gpulab/engine/gemm"
)

// Hidden shapes are written in each exercise's own words, the way its
// messages name a problem, as key=value fields separated by spaces or
// commas: "M=300 N=200 K=77" (GEMM), "n=1000 d=37 k=5" (k-means),
// "rows=5 width=4100" (RMSNorm), "tokens=300 experts=32 k=4 norm_topk=true
// scaling=1 bias=true" (router), "n=300 k=7 min=10 max=40 dim=7" (SQFD),
// "n=300" or "rows=17 cols=33" (puzzles). This file parses them into
// draws of the exercises' own problems.

// maxHiddenWork bounds a hidden shape's size: its inputs and the CPU
// reference that judges every row of it.
const maxHiddenWork = 1 << 30

// shapeSpec reads "key=value" fields; every key must be one of keys and
// given once.
func shapeSpec(spec string, keys ...string) (map[string]string, error) {
	fields := strings.FieldsFunc(spec, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })
	out := map[string]string{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("%q is not key=value (want %s)", f, strings.Join(keys, ", "))
		case !slices.Contains(keys, k):
			return nil, fmt.Errorf("unknown field %q (want %s)", k, strings.Join(keys, ", "))
		case out[k] != "":
			return nil, fmt.Errorf("%s is given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

// shapeFields reads integer fields, all of keys required.
func shapeFields(spec string, keys ...string) (map[string]int, error) {
	raw, err := shapeSpec(spec, keys...)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, k := range keys {
		v, ok := raw[k]
		if !ok {
			return nil, fmt.Errorf("no %s (want %s)", k, strings.Join(keys, ", "))
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not an integer", k, v)
		}
		out[k] = n
	}
	return out, nil
}

// atLeastOne checks that each named field is at least 1 and their product
// at most maxHiddenWork.
func atLeastOne(v map[string]int, keys ...string) error {
	work := 1
	for _, k := range keys {
		if v[k] < 1 {
			return fmt.Errorf("%s=%d: want at least 1", k, v[k])
		}
		work *= v[k]
		if work > maxHiddenWork {
			return fmt.Errorf("%s is too large to judge (more than %d)", strings.Join(keys, "×"), maxHiddenWork)
		}
	}
	return nil
}

// withShapes gives each flavour the parser of hidden shapes parse.
func withShapes(parse func(lang, spec string) (draw, error), fs []Flavor) []Flavor {
	for i := range fs {
		lang := fs[i].Lang
		fs[i].shape = func(spec string) (draw, error) { return parse(lang, spec) }
	}
	return fs
}

// gemmShape parses "M=… N=… K=…" into a draw launched as launch says.
func gemmShape(launch func(gemm.Shape) (wire.Task, error), t tiles) func(spec string) (draw, error) {
	return func(spec string) (draw, error) {
		v, err := shapeFields(spec, "M", "N", "K")
		if err == nil {
			err = atLeastOne(v, "M", "N", "K")
		}
		if err != nil {
			return nil, err
		}
		s := gemm.Shape{M: v["M"], N: v["N"], K: v["K"]}
		if _, err := launch(s); err != nil {
			return nil, err
		}
		return gemmDraws([]gemm.Shape{s}, launch, t)[0], nil
	}
}

// assignShape parses "n=… d=… k=…" for kmeans/assign.
func assignShape(lang, spec string) (draw, error) {
	v, err := shapeFields(spec, "n", "d", "k")
	if err == nil {
		err = atLeastOne(v, "n", "d", "k")
	}
	if err != nil {
		return nil, err
	}
	return assignDraws(lang, [3]int{v["n"], v["d"], v["k"]})[0], nil
}

// rmsnormShape parses "rows=… width=…" for lfm2/rmsnorm.
func rmsnormShape(lang, spec string) (draw, error) {
	v, err := shapeFields(spec, "rows", "width")
	if err == nil {
		err = atLeastOne(v, "rows", "width")
	}
	if err != nil {
		return nil, err
	}
	return rmsnormDraws(lang, [2]int{v["rows"], v["width"]})[0], nil
}

// sqfdHiddenShape parses "n=… k=… min=… max=… dim=…" (centroids per signature
// from min to max) for sqfd/assign.
func sqfdHiddenShape(lang, spec string) (draw, error) {
	v, err := shapeFields(spec, "n", "k", "min", "max", "dim")
	if err == nil {
		err = atLeastOne(v, "n", "max", "dim")
	}
	switch {
	case err != nil:
		return nil, err
	case v["k"] < 1 || v["k"] > v["n"]:
		return nil, fmt.Errorf("k=%d: want 1 to n=%d medoids", v["k"], v["n"])
	case v["min"] < 1 || v["min"] > v["max"]:
		return nil, fmt.Errorf("min=%d: want 1 to max=%d centroids", v["min"], v["max"])
	}
	return sqfdDraws(lang, sqfdShape{n: v["n"], k: v["k"], minC: v["min"], maxC: v["max"], dim: v["dim"]})[0], nil
}

// routerHiddenShape parses "tokens=… experts=… k=… norm_topk=… scaling=…
// bias=…" for lfm2/router.
func routerHiddenShape(lang, spec string) (draw, error) {
	raw, err := shapeSpec(spec, "tokens", "experts", "k", "norm_topk", "scaling", "bias")
	if err != nil {
		return nil, err
	}
	ints := map[string]int{}
	for _, k := range []string{"tokens", "experts", "k"} {
		if ints[k], err = strconv.Atoi(raw[k]); err != nil {
			return nil, fmt.Errorf("%s=%q is not an integer", k, raw[k])
		}
	}
	if err := atLeastOne(ints, "tokens", "experts"); err != nil {
		return nil, err
	}
	s := routerShape{tokens: ints["tokens"], experts: ints["experts"], k: ints["k"]}
	if s.k < 1 || s.k > s.experts {
		return nil, fmt.Errorf("k=%d: want 1 to experts=%d", s.k, s.experts)
	}
	if s.normTopK, err = strconv.ParseBool(raw["norm_topk"]); err != nil {
		return nil, fmt.Errorf("norm_topk=%q: want true or false", raw["norm_topk"])
	}
	if s.bias, err = strconv.ParseBool(raw["bias"]); err != nil {
		return nil, fmt.Errorf("bias=%q: want true or false", raw["bias"])
	}
	if s.scaling, err = strconv.ParseFloat(raw["scaling"], 64); err != nil || !(s.scaling > 0) {
		return nil, fmt.Errorf("scaling=%q: want a number above 0", raw["scaling"])
	}
	return routerDraws(lang, s)[0], nil
}
