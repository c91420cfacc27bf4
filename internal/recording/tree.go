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
		resolved := filepath.Clean(filepath.Join(filepath.Dir(rel), target))
		if filepath.IsAbs(target) || strings.HasPrefix(resolved, "..") {
			// Outside the root: not ours to copy, and a replay refuses such a link (Materialize).
			return nil
		}
		s.out = append(s.out, Entry{Path: rel, Link: target})
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
//
// A recording comes from elsewhere and is not trusted: every write goes through an os.Root of dir
// (no path, and no link on the way, leads out of it), and a link whose target is absolute or
// leads out of dir is refused with an error naming the record, before anything can read through
// it (checkLink).
func Materialize(dir string, entries []Entry) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	defer root.Close()
	base, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	for _, e := range entries {
		if !filepath.IsLocal(e.Path) {
			return fmt.Errorf("recording: record %q: the path leaves the replay directory", e.Path)
		}
		switch {
		case e.Dir:
			if err := root.MkdirAll(e.Path, 0o755); err != nil {
				return fmt.Errorf("recording: record %q: %w", e.Path, err)
			}
		case e.Link != "":
			if err := checkLinkShape(e); err != nil {
				return err
			}
			if err := mkParent(root, e.Path); err != nil {
				return err
			}
			_ = root.Remove(e.Path)
			if err := root.Symlink(e.Link, e.Path); err != nil {
				return fmt.Errorf("recording: record %q: %w", e.Path, err)
			}
			if err := checkLink(base, dir, e); err != nil {
				_ = root.Remove(e.Path)
				return err
			}
		default:
			if err := mkParent(root, e.Path); err != nil {
				return err
			}
			b := e.B64
			if e.Data != nil {
				b = []byte(*e.Data)
			}
			if err := writeFile(root, e.Path, b); err != nil {
				return fmt.Errorf("recording: record %q: %w", e.Path, err)
			}
		}
	}
	return nil
}

func mkParent(root *os.Root, rel string) error {
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return fmt.Errorf("recording: record %q: %w", rel, err)
	}
	return nil
}

// checkLinkShape accepts the targets sysfs links have: relative, some "..", then names
// (drivers/base/core.c and fs/sysfs/symlink.c make them so: "../../devices/pci0000:00/..."). A
// ".." after a name would be resolved from wherever that name leads, which a lexical check cannot
// follow, so it is refused too.
func checkLinkShape(e Entry) error {
	if filepath.IsAbs(e.Link) {
		return fmt.Errorf("recording: record %q: link target %q is absolute", e.Path, e.Link)
	}
	names := false
	for _, c := range strings.Split(e.Link, "/") {
		switch {
		case c == "..":
			if names {
				return fmt.Errorf("recording: record %q: link target %q goes up after going down", e.Path, e.Link)
			}
		case c == "" || c == ".":
			return fmt.Errorf("recording: record %q: link target %q is not a plain relative path", e.Path, e.Link)
		default:
			names = true
		}
	}
	return nil
}

// checkLink refuses a link that leads out of dir (base: dir with its links resolved) from where it
// really is: its leading ".." climb from its parent directory as the kernel resolves it (through
// the links above it), so a link is checked against that directory's depth inside dir. Every link
// being checked this way, a path through any number of them stays inside dir.
func checkLink(base, dir string, e Entry) error {
	parent, err := filepath.EvalSymlinks(filepath.Join(dir, filepath.Dir(e.Path)))
	if err != nil {
		return fmt.Errorf("recording: record %q: %w", e.Path, err)
	}
	rel, err := filepath.Rel(base, parent)
	if err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("recording: record %q: its directory leads out of the replay directory", e.Path)
	}
	if !filepath.IsLocal(filepath.Join(rel, e.Link)) {
		return fmt.Errorf("recording: record %q: link target %q leads out of the replay directory", e.Path, e.Link)
	}
	return nil
}

// writeFile replaces the content of rel inside root. Directories created by a link target recorded
// later are respected: a path that is already a directory is left alone.
func writeFile(root *os.Root, rel string, b []byte) error {
	if fi, err := root.Lstat(rel); err == nil && fi.IsDir() {
		return nil
	}
	return root.WriteFile(rel, b, 0o644)
}

// Text returns a pointer to s, for Entry.Data.
func Text(s string) *string { return &s }
