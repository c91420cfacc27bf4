package recording // import "github.com/otelcol-iclens/otelcol-iclens/internal/recording"

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxRecordBytes bounds one line of a recording, decompressed: the largest record a receiver
// writes is a Tree of the node's discovery files (a few hundred KiB for a node with dozens of
// RDMA ports and their PCI config spaces), so 16 MiB leaves room while a corrupt or hostile file
// (a gzip bomb: one line of gigabytes) is refused at that size, naming the file and the line,
// instead of being decoded into memory.
const MaxRecordBytes = 16 << 20

// lineReader reads a recording's lines one at a time, each at most MaxRecordBytes.
type lineReader struct {
	f    *os.File // nil when reading from a caller's io.Reader
	gz   *gzip.Reader
	br   *bufio.Reader
	line int // lines read so far
	buf  []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// openLines opens path (gzip-compressed when it ends in .gz).
func openLines(path string) (*lineReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	var in io.Reader = f
	var gz *gzip.Reader
	if strings.HasSuffix(path, ".gz") {
		if gz, err = gzip.NewReader(f); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("recording %s: %w", path, err)
		}
		in = gz
	}
	lr := newLineReader(in)
	lr.f, lr.gz = f, gz
	return lr, nil
}

// next returns the next non-blank line (valid until the next call) and whether it ended in a
// newline; io.EOF after the last.
func (r *lineReader) next() ([]byte, bool, error) {
	for {
		r.buf = r.buf[:0]
		for {
			chunk, err := r.br.ReadSlice('\n')
			if len(r.buf)+len(chunk) > MaxRecordBytes {
				return nil, false, fmt.Errorf("line %d: longer than %d bytes", r.line+1, MaxRecordBytes)
			}
			if need := len(r.buf) + len(chunk); need > cap(r.buf) {
				// Doubling, not append's gentler growth for large slices: a line at the bound
				// costs about twice the bound in allocations, not five times.
				grown := make([]byte, len(r.buf), min(max(2*cap(r.buf), need), MaxRecordBytes))
				copy(grown, r.buf)
				r.buf = grown
			}
			r.buf = append(r.buf, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && !errors.Is(err, io.EOF) {
				// A gzip stream cut short (io.ErrUnexpectedEOF) ends what can be read.
				return r.buf, false, err
			}
			if len(r.buf) == 0 && err != nil {
				return nil, false, io.EOF
			}
			r.line++
			complete := err == nil
			if line := bytes.TrimSpace(r.buf); len(line) > 0 {
				return line, complete, nil
			}
			if !complete {
				return nil, false, io.EOF
			}
			break // a blank line
		}
	}
}

func (r *lineReader) close() error {
	var err error
	if r.gz != nil {
		err = r.gz.Close()
	}
	if r.f != nil {
		err = errors.Join(err, r.f.Close())
	}
	return err
}

// readHeader reads and checks line 1.
func (r *lineReader) readHeader() (Header, error) {
	var h Header
	line, _, err := r.next()
	if errors.Is(err, io.EOF) {
		return h, errors.New("header: empty file")
	}
	if err != nil {
		return h, fmt.Errorf("header: %w", err)
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, fmt.Errorf("header: %w", err)
	}
	if h.Format != Format {
		return h, fmt.Errorf("not an otelcol-iclens recording (format %q)", h.Format)
	}
	if h.Version < 1 || h.Version > Version {
		return h, fmt.Errorf("recording version %d is not supported (this collector reads up to %d)", h.Version, Version)
	}
	return h, nil
}

// readRecord reads the next record; ok is false at the end. A recording cut short (the node
// crashed mid-write: a last line without its newline, or a gzip stream that stops) ends at its
// last complete record once at least one was read (some is how many were).
func (r *lineReader) readRecord(some int) (Record, bool, error) {
	var rec Record
	line, complete, err := r.next()
	if errors.Is(err, io.EOF) {
		return rec, false, nil
	}
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) && some > 0 {
			return rec, false, nil
		}
		return rec, false, fmt.Errorf("record %d: %w", r.line+1, err)
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		if !complete && some > 0 {
			return rec, false, nil
		}
		return rec, false, fmt.Errorf("record %d: %w", r.line, err)
	}
	return rec, true, nil
}

// records is where a Player takes its records from, one at a time.
type records interface {
	// next returns the next record; false at the end.
	next() (Record, bool, error)
	// rewind starts over at the first record.
	rewind() error
	close() error
}

// fileRecords streams a recording file: one record in memory at a time, however long the file.
type fileRecords struct {
	path  string
	lr    *lineReader
	count int // records read in this pass
}

func openFileRecords(path string) (*fileRecords, Header, error) {
	lr, err := openLines(path)
	if err != nil {
		return nil, Header{}, err
	}
	h, err := lr.readHeader()
	if err != nil {
		_ = lr.close()
		return nil, Header{}, fmt.Errorf("recording %s: %w", path, err)
	}
	return &fileRecords{path: path, lr: lr}, h, nil
}

func (f *fileRecords) next() (Record, bool, error) {
	r, ok, err := f.lr.readRecord(f.count)
	if err != nil {
		return r, false, fmt.Errorf("recording %s: %w", f.path, err)
	}
	if ok {
		f.count++
	}
	return r, ok, nil
}

func (f *fileRecords) rewind() error {
	_ = f.lr.close()
	lr, err := openLines(f.path)
	if err != nil {
		return err
	}
	f.lr, f.count = lr, 0
	if _, err := lr.readHeader(); err != nil {
		return fmt.Errorf("recording %s: %w", f.path, err)
	}
	return nil
}

func (f *fileRecords) close() error { return f.lr.close() }

// memRecords plays a Recording held in memory (tests, tools).
type memRecords struct {
	rec *Recording
	i   int
}

func (m *memRecords) next() (Record, bool, error) {
	if m.i >= len(m.rec.Records) {
		return Record{}, false, nil
	}
	m.i++
	return m.rec.Records[m.i-1], true, nil
}

func (m *memRecords) rewind() error { m.i = 0; return nil }
func (m *memRecords) close() error  { return nil }
