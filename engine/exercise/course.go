package exercise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"gpulab/engine/readlimit"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// A Course is an instructor's settings for grading, read from a JSON file
// (lab grade --course FILE, docs/course.md):
//
//	{
//	  "seed": 20270114,
//	  "exercises": {
//	    "gemm/tiled": {
//	      "shapes": ["M=300 N=200 K=77", "M=1 N=513 K=2"],
//	      "solutions": {"opencl": "solutions/gemm_tiled.cl", "cuda": "solutions/gemm_tiled.cu"}
//	    }
//	  }
//	}
//
// Shapes are checked after an exercise's public shapes, in the exercise's
// own words (course_shapes.go); a solution, a path relative to the file,
// replaces the public reference solution in its language, so that speeds
// are shares of the instructor's own; the seed makes the random inputs of
// a grading run reproducible (without it they come from crypto/rand). A
// submission identical to the public reference solution (but for
// whitespace) is refused. The file and the solutions stay in the grading
// process: a worker sees only the tasks drawn from them.
type Course struct {
	Seed      *uint64                   `json:"seed,omitempty"`
	Exercises map[string]CourseExercise `json:"exercises"`

	path      string
	solutions map[string]map[string]string // by exercise and language: the source
	hidden    map[string]map[string][]draw // by exercise and language
}

// CourseExercise is what a course sets for one exercise.
type CourseExercise struct {
	Shapes    []string          `json:"shapes,omitempty"`
	Solutions map[string]string `json:"solutions,omitempty"` // by language: a path, relative to the course file
}

// maxSolutionBytes bounds a solution that a course file names.
const maxSolutionBytes = 1 << 20

// maxCourseBytes bounds a course file: shapes, a seed and the paths of
// solutions, a few kilobytes.
const maxCourseBytes = 1 << 20

// ReadCourse reads and checks a course file: every exercise exists, every
// hidden shape parses for each of its languages, every solution is a
// readable source in the language it is given for, without the
// skeleton's TODO line. An error names the file, the exercise and what is
// wrong.
func ReadCourse(path string) (*Course, error) {
	data, err := readlimit.ReadFile(path, "course file", maxCourseBytes)
	if err != nil {
		return nil, fmt.Errorf("course: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	c := &Course{path: path, solutions: map[string]map[string]string{}, hidden: map[string]map[string][]draw{}}
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("course %s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("course %s: more than one JSON value", path)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Exercises)) {
		if err := c.load(name, c.Exercises[name]); err != nil {
			return nil, fmt.Errorf("course %s: %s: %w", path, name, err)
		}
	}
	return c, nil
}

// load checks one exercise's settings and keeps its solutions' sources
// and its hidden shapes' draws.
func (c *Course) load(name string, ce CourseExercise) error {
	e, err := Lookup(name)
	if err != nil {
		return err
	}
	c.solutions[name], c.hidden[name] = map[string]string{}, map[string][]draw{}
	for lang, file := range ce.Solutions {
		f, err := e.Flavor(lang)
		if err != nil {
			return err
		}
		if !filepath.IsAbs(file) {
			file = filepath.Join(filepath.Dir(c.path), file)
		}
		src, err := readSolution(file)
		switch {
		case err != nil:
			return fmt.Errorf("the %s solution: %w", lang, err)
		case lang != LangGo && Language(src) != lang:
			return fmt.Errorf("the %s solution %s declares no %s kernel", lang, file, lang)
		case unfinished(src, f.TODO):
			return fmt.Errorf("the %s solution %s still has the skeleton's TODO line", lang, file)
		}
		c.solutions[name][lang] = src
	}
	for _, spec := range ce.Shapes {
		for _, f := range e.Flavors {
			if f.shape == nil {
				return errors.New("this exercise takes no hidden shapes (its check draws its own sizes)")
			}
			d, err := f.shape(spec)
			if err != nil {
				return fmt.Errorf("shape %q: %w", spec, err)
			}
			c.hidden[name][f.Lang] = append(c.hidden[name][f.Lang], d)
		}
	}
	return nil
}

// readSolution reads a solution file of at most the size of a Hello's
// source, which must be text (CheckText).
func readSolution(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() || info.Size() > maxSolutionBytes {
		return "", fmt.Errorf("%s is not a regular file of at most 1 MiB", path)
	}
	data, err := readlimit.ReadFile(path, "solution", maxSolutionBytes) // it may have grown since
	if err != nil {
		return "", err
	}
	if err := CheckText(string(data)); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return string(data), nil
}

// Paths are the files the course reads, which no submission may see.
func (c *Course) Paths() []string {
	paths := []string{c.path}
	for _, ce := range c.Exercises {
		for _, file := range ce.Solutions {
			if !filepath.IsAbs(file) {
				file = filepath.Join(filepath.Dir(c.path), file)
			}
			paths = append(paths, file)
		}
	}
	sort.Strings(paths)
	return paths
}

// Apply returns the exercise as the course grades it: each flavour's
// reference solution the instructor's where the course gives one, its
// check with the hidden shapes after the public ones and the course's
// seed, and a submission identical to the public reference refused when
// inspected.
func (c *Course) Apply(e Exercise) Exercise {
	out := e
	out.Flavors = slices.Clone(e.Flavors)
	publics := map[string]string{}
	for i, f := range out.Flavors {
		if public, err := f.Solution(); err == nil {
			publics[f.Lang] = public
		}
		if sol, ok := c.solutions[e.Name][f.Lang]; ok {
			out.Flavors[i].Solution = func() (string, error) { return sol, nil }
		}
		check, hidden := f.check, c.hidden[e.Name][f.Lang]
		out.Flavors[i].check = func(s *session) Result {
			if c.Seed != nil {
				s.rng = rand.New(rand.NewPCG(*c.Seed, 0x9e3779b97f4a7c15))
			}
			s.hidden = hidden
			return check(s)
		}
	}
	out.refuse = func(f Flavor, src string) error {
		if public, ok := publics[f.Lang]; ok && sameText(src, public) {
			return errors.New("this is the public reference solution, as published: the course grades a solution of your own")
		}
		return nil
	}
	return out
}

// sameText says whether a and b differ in whitespace only.
func sameText(a, b string) bool {
	return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}
