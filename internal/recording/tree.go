package recording

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// maxFileSize bounds what a snapshot copies from one file: sysfs attributes are at most a page,
// PCI config space 4 KiB; anything larger is not an attribute.
const maxFileSize = 64 << 10

// Snapshot records the files, links and directories below each of paths (relative to root). A
// symbolic link is recorded as a link and, when it points inside root, its target is recorded
// too, so that a class directory (/sys/class/infiniband/mlx5_0 -> ../../devices/...) comes with
// the device it names. skip, when set, leaves out paths (and everything below them).
func Snapshot(root string, paths []string, skip func(rel string) bool) ([]Entry, error) {
	s := &snapshotter{root: filepath.Clean(root), seen: map[string]bool{}, skip: skip}
	var errs []error
	for _, p := range paths {
		if err := s.visit(filepath.Clean(p), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return s.out, errors.Join(errs...)
}

type snapshotter struct {
	root string
	seen map[string]bool
	skip func(string) bool
	out  []Entry
}

// maxDepth stops runaway recursion through link cycles (sysfs has subsystem/ and device/ links
// pointing back up).
const maxDepth = 24

func (s *snapshotter) visit(rel string, depth int) error {
	if s.seen[rel] || depth > maxDepth || (s.skip != nil && s.skip(rel)) {
		return nil
	}
	s.seen[rel] = true
	abs := filepath.Join(s.root, rel)
	fi, err := os.Lstat(abs)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(abs)
		if err != nil {
			return err
		}
		s.out = append(s.out, Entry{Path: rel, Link: target})
		resolved := filepath.Clean(filepath.Join(filepath.Dir(rel), target))
		if filepath.IsAbs(target) || strings.HasPrefix(resolved, "..") {
			return nil // outside the root: not ours to copy
		}
		return s.visit(resolved, depth+1)
	case fi.IsDir():
		s.out = append(s.out, Entry{Path: rel, Dir: true})
		entries, err := os.ReadDir(abs)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := s.visit(filepath.Join(rel, e.Name()), depth+1); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		b, err := readBounded(abs)
		if err != nil {
			// Unreadable attributes (write-only, EINVAL on read) are part of the picture as a
			// missing file; do not fail the snapshot.
			return nil
		}
		e := Entry{Path: rel}
		if utf8.Valid(b) {
			str := string(b)
			e.Data = &str
		} else {
			e.B64 = b
		}
		s.out = append(s.out, e)
	}
	return nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxFileSize))
}

// Materialize writes entries under dir, creating parents as needed. Files are written with the
// exact recorded content; links keep their recorded (relative) targets, so the tree resolves the
// same way it did on the recorded node.
func Materialize(dir string, entries []Entry) error {
	for _, e := range entries {
		if !filepath.IsLocal(e.Path) {
			return fmt.Errorf("recording: path %q leaves the tree", e.Path)
		}
		p := filepath.Join(dir, e.Path)
		switch {
		case e.Dir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case e.Link != "":
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			_ = os.Remove(p)
			if err := os.Symlink(e.Link, p); err != nil {
				return err
			}
		default:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			b := e.B64
			if e.Data != nil {
				b = []byte(*e.Data)
			}
			if err := writeFile(p, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeFile replaces the content of p. Directories created by a link target recorded later are
// respected: a path that is already a directory is left alone.
func writeFile(p string, b []byte) error {
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		return nil
	}
	return os.WriteFile(p, b, 0o644)
}

// Text returns a pointer to s, for Entry.Data.
func Text(s string) *string { return &s }
