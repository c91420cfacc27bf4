// Package recording writes and reads otelcol-iclens recordings: the raw readings a receiver takes
// from its source (sysfs files, perf counter groups, DCGM/NVML samples), with timestamps and the
// static facts it discovered, so that a misbehaving node can be recorded where it runs and
// replayed anywhere through the same receiver code. FORMAT.md beside this file is the reference.
package recording // import "github.com/otelcol-iclens/otelcol-iclens/internal/recording"

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Format and Version identify the file; a reader refuses other formats and newer versions.
const (
	Format  = "otelcol-iclens/recording"
	Version = 1
)

// Header is the first line of a recording.
type Header struct {
	Format   string    `json:"format"`
	Version  int       `json:"version"`
	Receiver string    `json:"receiver"` // rnic, cpuuncore, gpu
	Host     string    `json:"host,omitempty"`
	Created  time.Time `json:"created"`
	// Interval is the collection interval the samples were taken at.
	Interval Duration `json:"interval"`
	// Note says what the recording shows (a simulated case, an incident).
	Note string `json:"note,omitempty"`
}

// Record is one line after the header: static facts, or the readings of one scrape.
type Record struct {
	// Time is when the readings were taken.
	Time time.Time `json:"t"`
	// Tree is a set of files and links that do not change between scrapes (sysfs attributes,
	// symlinks, /proc files): what discovery reads. A later Tree record replaces earlier entries
	// with the same path and adds new ones (devices appeared).
	Tree []Entry `json:"tree,omitempty"`
	// Files are the values read from files during one scrape, by path relative to the root.
	Files map[string]string `json:"files,omitempty"`
	// Errors are files whose read failed during this scrape, with the errno name (EINVAL, EIO, ...).
	Errors map[string]string `json:"errors,omitempty"`
	// Facts and Sample hold receiver-specific payloads (see FORMAT.md): the devices a library
	// reported, the perf group reads, the ethtool statistics of one scrape.
	Facts  json.RawMessage `json:"facts,omitempty"`
	Sample json.RawMessage `json:"sample,omitempty"`
}

// Entry is one path of a Tree: a file's content, a symbolic link's target, or a directory.
type Entry struct {
	Path string `json:"path"`
	// Data is the file content (text). Binary content (PCI config space) goes to B64 instead.
	Data *string `json:"data,omitempty"`
	B64  []byte  `json:"b64,omitempty"`
	Link string  `json:"link,omitempty"`
	Dir  bool    `json:"dir,omitempty"`
}

// Duration marshals as a Go duration string ("1s").
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("interval: %w", err)
	}
	*d = Duration(v)
	return nil
}

// Writer appends records to a recording file. It is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	gz   *gzip.Writer
	buf  *bufio.Writer
	enc  *json.Encoder
	path string
}

// Create starts a recording at path (gzip-compressed when it ends in .gz) and writes the header.
//
// The file is created new, never opened as it is: O_CREAT|O_EXCL|O_NOFOLLOW, so that a link
// planted at the path is not followed and an earlier recording (a collector restarted with the
// same configuration) is not truncated, and mode 0600, so that the readings are the operator's
// alone whatever the umask. When path exists, the recording goes to the first free
// <name>.<n><extension> beside it (node1-rnic.1.jsonl.gz); Path says which.
func Create(path string, h Header) (*Writer, error) {
	f, err := createNew(path)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	path = f.Name()
	w := &Writer{f: f, path: path}
	var out io.Writer = f
	if strings.HasSuffix(path, ".gz") {
		w.gz = gzip.NewWriter(f)
		out = w.gz
	}
	w.buf = bufio.NewWriter(out)
	w.enc = json.NewEncoder(w.buf)
	h.Format, h.Version = Format, Version
	if h.Created.IsZero() {
		h.Created = time.Now().UTC()
	}
	if err := w.enc.Encode(h); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("recording %s: %w", path, err)
	}
	return w, nil
}

// maxSuffix bounds the search for a free name beside an existing recording.
const maxSuffix = 1000

func createNew(path string) (*os.File, error) {
	stem, ext := splitExt(path)
	for n := 0; n <= maxSuffix; n++ {
		p := path
		if n > 0 {
			p = fmt.Sprintf("%s.%d%s", stem, n, ext)
		}
		// O_EXCL with O_CREATE fails on any existing name, a symbolic link included: links are
		// not followed (open(2), O_EXCL).
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue // an earlier recording, or a link planted at the path: leave it alone
		}
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, &os.PathError{Op: "create", Path: p, Err: err}
		}
		// The umask can only take bits away from 0600; chmod makes the mode exact anyway.
		_ = f.Chmod(0o600)
		return f, nil
	}
	return nil, fmt.Errorf("%s and %d numbered names beside it exist", path, maxSuffix)
}

// splitExt splits node1-rnic.jsonl.gz into node1-rnic and .jsonl.gz, so that a numbered name
// keeps what says it is compressed.
func splitExt(path string) (string, string) {
	dir, base := filepath.Split(path)
	for _, ext := range []string{".jsonl.gz", ".json.gz", ".jsonl", ".gz"} {
		if stem, ok := strings.CutSuffix(base, ext); ok && stem != "" {
			return dir + stem, ext
		}
	}
	ext := filepath.Ext(base)
	return dir + strings.TrimSuffix(base, ext), ext
}

// Path is the file the recording is written to (Create may have picked a numbered name).
func (w *Writer) Path() string { return w.path }

// Write appends one record and flushes it, so that a recording cut short by a crash is readable.
func (w *Writer) Write(r Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.enc.Encode(r); err != nil {
		return fmt.Errorf("recording %s: %w", w.path, err)
	}
	if err := w.buf.Flush(); err != nil {
		return fmt.Errorf("recording %s: %w", w.path, err)
	}
	if w.gz != nil {
		return w.gz.Flush()
	}
	return nil
}

// writeLine appends one record already encoded (a Ring's), flushed as Write flushes.
func (w *Writer) writeLine(line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.buf.Write(line)
	if err == nil {
		err = w.buf.WriteByte('\n')
	}
	if err == nil {
		err = w.buf.Flush()
	}
	if err != nil {
		return fmt.Errorf("recording %s: %w", w.path, err)
	}
	if w.gz != nil {
		return w.gz.Flush()
	}
	return nil
}

// Close finishes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.buf.Flush()
	if w.gz != nil {
		err = errors.Join(err, w.gz.Close())
	}
	return errors.Join(err, w.f.Close())
}

// Recording is a whole recording in memory: for tests and tools that inspect a file. A replay
// never loads one (OpenReplay streams).
type Recording struct {
	Header  Header
	Records []Record
}

// Open reads a whole recording (gzip-compressed or not), each record at most MaxRecordBytes. It
// refuses files of another format or of a newer version, naming the file.
func Open(path string) (*Recording, error) {
	src, h, err := openFileRecords(path)
	if err != nil {
		return nil, err
	}
	defer src.close()
	rec := &Recording{Header: h}
	for {
		r, ok, err := src.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return rec, nil
		}
		rec.Records = append(rec.Records, r)
	}
}

// Decode reads a whole recording from r, each record at most MaxRecordBytes.
func Decode(r io.Reader) (*Recording, error) {
	lr := newLineReader(r)
	h, err := lr.readHeader()
	if err != nil {
		return nil, err
	}
	rec := &Recording{Header: h}
	for {
		r, ok, err := lr.readRecord(len(rec.Records))
		if err != nil {
			return nil, err
		}
		if !ok {
			return rec, nil
		}
		rec.Records = append(rec.Records, r)
	}
}

// Samples returns the records that carry readings (everything but pure Tree/Facts records).
func (r *Recording) Samples() []Record {
	var out []Record
	for _, rec := range r.Records {
		if rec.Files != nil || rec.Errors != nil || rec.Sample != nil {
			out = append(out, rec)
		}
	}
	return out
}
