package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gpulab/engine/atomicfile"
)

// lab copies keeps a student's working copies of the lessons: make lab
// opens Jupyter on them, so that editing and saving never touches the
// lessons the repository tracks, and git pull never conflicts.

// copiesManifest is the file in the working folder that remembers, for
// each copy, the lesson's hash when it was copied: a copy whose hash is
// still that one was never edited, and may follow a newer lesson.
const copiesManifest = ".lessons.json"

// copyReport is what a sync did to each lesson.
type copyReport struct {
	Fresh, Updated, Kept, Stale []string // Stale: kept edits of a lesson that has changed since
}

func copiesCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("copies", stderr)
	from := fs.String("from", "notebooks", "the lessons")
	to := fs.String("to", "work", "the working copies")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab copies [--from notebooks] [--to work]: copy the lessons that have no working copy yet, and update copies that were never edited")
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	r, err := syncCopies(*from, *to)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Your working copies of the lessons are in %s/ (edit and save them freely; %s/ stays as the lab ships it).\n", *to, *from)
	for _, p := range r.Fresh {
		fmt.Fprintf(stdout, "  new copy: %s\n", p)
	}
	for _, p := range r.Updated {
		fmt.Fprintf(stdout, "  updated (you had not edited it): %s\n", p)
	}
	for _, p := range r.Stale {
		fmt.Fprintf(stdout, "  kept your edits of %s, but the lesson has changed since: for a fresh copy, delete %s and run make lab again\n",
			p, filepath.Join(*to, p))
	}
	return nil
}

// syncCopies copies every lesson (.ipynb) of from that has no copy in to,
// replaces copies that were never edited when their lesson has changed,
// and never touches a copy that was edited.
func syncCopies(from, to string) (copyReport, error) {
	var r copyReport
	lessons, err := lessonFiles(from)
	if err != nil {
		return r, err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return r, err
	}
	manifest := map[string]string{}
	if data, err := os.ReadFile(filepath.Join(to, copiesManifest)); err == nil {
		if err := json.Unmarshal(data, &manifest); err != nil {
			return r, fmt.Errorf("%s: %w (delete it to start the copies afresh)", filepath.Join(to, copiesManifest), err)
		}
	}
	for _, rel := range lessons {
		lesson, err := os.ReadFile(filepath.Join(from, rel))
		if err != nil {
			return r, err
		}
		dst := filepath.Join(to, rel)
		copied, hadCopy := manifest[rel]
		mine, err := os.ReadFile(dst)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.Fresh = append(r.Fresh, rel)
		case err != nil:
			return r, err
		case hash(lesson) == hash(mine) || hash(lesson) == copied:
			r.Kept = append(r.Kept, rel)
			manifest[rel] = hash(lesson)
			continue
		case hadCopy && hash(mine) == copied: // never edited: follow the lesson
			r.Updated = append(r.Updated, rel)
		default:
			r.Stale = append(r.Stale, rel)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return r, err
		}
		if err := atomicfile.WriteBytes(dst, lesson); err != nil {
			return r, err
		}
		manifest[rel] = hash(lesson)
	}
	data, err := json.MarshalIndent(manifest, "", " ")
	if err != nil {
		return r, err
	}
	return r, atomicfile.WriteBytes(filepath.Join(to, copiesManifest), append(data, '\n'))
}

// lessonFiles lists the notebooks under dir (relative paths, sorted),
// leaving out Jupyter's checkpoints.
func lessonFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != dir {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".ipynb") {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

func hash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
