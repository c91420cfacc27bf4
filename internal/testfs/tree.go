package testfs

import (
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
)

// Tree is a kernel-shaped file tree being laid out: regular files, symbolic links and directories
// by slash-separated path relative to the tree's root ("sys/class/net/eth0"), in the order they
// were first added. A path added again keeps its place and takes the new content, as a second
// write of the same file would. The same Tree is written to a directory (Write: test fixtures) or
// handed over as recording entries (Entries: the simulator's recordings), so every kernel-shaped
// tree of the repository is laid out by this package.
type Tree struct {
	entries []recording.Entry
	at      map[string]int
}

func (t *Tree) add(e recording.Entry) {
	e.Path = path.Clean(e.Path)
	if i, ok := t.at[e.Path]; ok {
		t.entries[i] = e
		return
	}
	if t.at == nil {
		t.at = map[string]int{}
	}
	t.at[e.Path] = len(t.entries)
	t.entries = append(t.entries, e)
}

// File adds a regular file with exactly this content.
func (t *Tree) File(p, content string) {
	t.add(recording.Entry{Path: p, Data: recording.Text(content)})
}

// Attr adds a sysfs attribute holding v as show() prints it: followed by a newline
// (sysfs_emit(buf, "%s\n", ...), Documentation/filesystems/sysfs.rst).
func (t *Tree) Attr(p, v string) { t.File(p, v+"\n") }

// Bytes adds a binary file (a PCI configuration space).
func (t *Tree) Bytes(p string, b []byte) { t.add(recording.Entry{Path: p, B64: b}) }

// Link adds a symbolic link to target (relative, as sysfs links are).
func (t *Tree) Link(p, target string) { t.add(recording.Entry{Path: p, Link: target}) }

// Dir adds a directory, for one that must exist even when nothing is in it.
func (t *Tree) Dir(p string) { t.add(recording.Entry{Path: p, Dir: true}) }

// Entries returns the tree as recording entries (recording.Record.Tree).
func (t *Tree) Entries() []recording.Entry { return t.entries }

// Write lays the tree out under root, creating root and every parent directory as needed
// (recording.Materialize: directories 0755, files 0644, links as they are).
func (t *Tree) Write(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("testfs: %w", err)
	}
	if err := recording.Materialize(root, t.entries); err != nil {
		return fmt.Errorf("testfs: writing %s: %w", root, err)
	}
	return nil
}

// Remove drops p and everything below it, as a device that goes away takes its files along.
func (t *Tree) Remove(p string) {
	p = path.Clean(p)
	kept := t.entries[:0]
	clear(t.at)
	for _, e := range t.entries {
		if e.Path == p || strings.HasPrefix(e.Path, p+"/") {
			continue
		}
		t.at[e.Path] = len(kept)
		kept = append(kept, e)
	}
	t.entries = kept
}
