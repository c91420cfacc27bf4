//go:build linux

package sysfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestReadUint(t *testing.T) {
	dir := t.TempDir()
	var r Reader

	v, err := r.ReadUint(write(t, dir, "dec", "2880761508848\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(2880761508848), v)

	v, err = r.ReadUint(write(t, dir, "hex", "0x1f\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(31), v)

	v, err = r.ReadUint(write(t, dir, "max", "18446744073709551615\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<64-1), v)

	// Old kernels print this when the PMA query fails (node_exporter fixture i40iw0).
	na := write(t, dir, "na", "N/A (no PMA)\n")
	_, err = r.ReadUint(na)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNotAvailable)
	assert.Contains(t, err.Error(), na)

	garbage := write(t, dir, "garbage", "12abc\n")
	_, err = r.ReadUint(garbage)
	var ve *ValueError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, garbage, ve.Path)
	assert.NotErrorIs(t, err, ErrNotAvailable)

	_, err = r.ReadUint(write(t, dir, "empty", ""))
	require.ErrorAs(t, err, &ve)

	_, err = r.ReadUint(write(t, dir, "overflow", "18446744073709551616"))
	require.ErrorAs(t, err, &ve)
	assert.ErrorIs(t, err, strconv.ErrRange)

	missing := filepath.Join(dir, "missing")
	_, err = r.ReadUint(missing)
	var pe *PathError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), missing)

	assert.Equal(t, int64(8), r.Opened())
}

func TestReadInt(t *testing.T) {
	dir := t.TempDir()
	var r Reader
	v, err := r.ReadInt(write(t, dir, "numa_node", "-1\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(-1), v)
	_, err = r.ReadInt(write(t, dir, "bad", "one\n"))
	var ve *ValueError
	require.ErrorAs(t, err, &ve)
}

// The kernel fails a PMA counter read with EINVAL on modern kernels (show_pma_counter returns the
// error of get_perf_mad) and some drivers answer EOPNOTSUPP: both mean "not available".
func TestPathErrorNotAvailable(t *testing.T) {
	for _, errno := range []error{unix.EINVAL, unix.EOPNOTSUPP} {
		err := error(&PathError{Op: "read", Path: "/sys/x", Err: errno})
		assert.ErrorIs(t, err, ErrNotAvailable)
	}
	err := error(&PathError{Op: "open", Path: "/sys/x", Err: unix.EACCES})
	assert.NotErrorIs(t, err, ErrNotAvailable)
	assert.True(t, errors.Is(err, os.ErrPermission))
}

func TestOnOpen(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "v", "1")
	var seen []string
	r := Reader{OnOpen: func(path string) error {
		seen = append(seen, path)
		if len(seen) > 1 {
			return unix.EINVAL
		}
		return nil
	}}
	_, err := r.ReadString(p)
	require.NoError(t, err)
	assert.Equal(t, []string{p}, seen)
	_, err = r.ReadUint(p)
	assert.ErrorIs(t, err, ErrNotAvailable, "an injected EINVAL reads as the kernel's EINVAL")
}

func FuzzParseUint(f *testing.F) {
	for _, s := range []string{"0", "42\n", "4294967295", "18446744073709551615", "N/A (no PMA)", "0x10", "-1", " 7 ", "", "1e3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseUint("fuzz", b)
		if err != nil {
			var ve *ValueError
			if !errors.As(err, &ve) || ve.Path != "fuzz" {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		// Whatever parses must agree with strconv on the trimmed text.
		s := string(bytes.TrimSpace(b))
		base := 10
		if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
			s, base = s[2:], 16
		}
		want, serr := strconv.ParseUint(s, base, 64)
		if serr != nil || want != v {
			t.Fatalf("ParseUint(%q) = %d, strconv says %d, %v", b, v, want, serr)
		}
	})
}

func TestOnRead(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "v", "42\n")
	type read struct {
		path, content string
		err           bool
	}
	var reads []read
	r := Reader{OnRead: func(path string, b []byte, err error) { reads = append(reads, read{path, string(b), err != nil}) }}
	_, _ = r.ReadUint(p)
	_, _ = r.ReadUint(filepath.Join(dir, "missing"))
	assert.Equal(t, []read{{p, "42", false}, {filepath.Join(dir, "missing"), "", true}}, reads)
}

// Test fixtures and replays rewrite files in place (os.WriteFile truncates the same inode), which
// a kept descriptor sees too. A read that fails drops the descriptor and the next read opens the
// path again: a device that went away fails kept reads with ENODEV, which callers see as gone.
func TestReadKeptFailureReopens(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "port_xmit_data", "10\n")
	var inject error
	r := Reader{OnOpen: func(string) error { return inject }}
	defer r.CloseKept()

	v, err := r.ReadUintKept(p)
	require.NoError(t, err)
	assert.Equal(t, uint64(10), v)
	write(t, dir, "port_xmit_data", "1234567\n")
	v, err = r.ReadUintKept(p)
	require.NoError(t, err)
	assert.Equal(t, uint64(1234567), v, "a longer value written in place")
	write(t, dir, "port_xmit_data", "9\n")
	v, err = r.ReadUintKept(p)
	require.NoError(t, err)
	assert.Equal(t, uint64(9), v, "a shorter value written in place leaves nothing of the old one")
	assert.Equal(t, int64(1), r.Opened())

	inject = unix.ENODEV
	_, err = r.ReadUintKept(p)
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist, "ENODEV on a kept file means the device is gone")
	assert.Contains(t, err.Error(), p)
	assert.Equal(t, 0, r.Kept(), "the failed descriptor is closed")

	inject = nil
	v, err = r.ReadUintKept(p)
	require.NoError(t, err)
	assert.Equal(t, uint64(9), v)
	assert.Equal(t, int64(2), r.Opened(), "reopened after the failure")

	// A file that is not there is an open error naming it, and nothing is kept.
	missing := filepath.Join(dir, "missing")
	_, err = r.ReadUintKept(missing)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), missing)
	assert.Equal(t, 1, r.Kept())
}

func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	p := filepath.Join(dir, "port_xmit_data")
	require.NoError(b, os.WriteFile(p, []byte("2880761508848\n"), 0o644))
	var r Reader
	defer r.CloseKept()
	b.Run("open_read_close", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.ReadUint(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kept_pread", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.ReadUintKept(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestReadRefusesNonRegularFiles: a named pipe in place of an attribute (kernfs attributes are
// always regular files, fs/kernfs/inode.c) is refused at once instead of blocking the open or the
// read until a writer comes, by ReadBytes and ReadBytesKept alike.
func TestReadRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "port_xmit_data")
	require.NoError(t, unix.Mkfifo(fifo, 0o644))
	var r Reader
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := r.ReadBytes(fifo)
		assert.ErrorIs(t, err, ErrNotRegular)
		assert.Contains(t, err.Error(), fifo)
		_, err = r.ReadUintKept(fifo)
		assert.ErrorIs(t, err, ErrNotRegular)
		assert.Equal(t, 0, r.Kept())
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		// A read of a FIFO with no writer never returns: a minute is a deadline, not a speed.
		t.Fatal("a read of a named pipe blocks")
	}
}

// TestConfinedReads: a Reader confined to a directory reads through links inside it and refuses a
// link out of it (openat2 RESOLVE_BENEATH) and paths not under it, naming the file.
func TestConfinedReads(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(outside, []byte("hunter2"), 0o600))
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sys", "devices", "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sys", "devices", "d", "fw_ver"), []byte("1.2\n"), 0o644))
	require.NoError(t, os.Symlink("devices/d", filepath.Join(dir, "sys", "dev")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "sys", "devices", "d", "board_id")))
	require.NoError(t, os.Symlink("../../../../../../../../../.."+outside, filepath.Join(dir, "sys", "devices", "d", "up")))

	var r Reader
	require.NoError(t, r.Confine(dir))
	f := r.Fork()
	for _, rd := range []*Reader{&r, f} {
		s, err := rd.ReadString(filepath.Join(dir, "sys", "dev", "fw_ver"))
		require.NoError(t, err)
		assert.Equal(t, "1.2", s)
		for _, p := range []string{filepath.Join(dir, "sys", "dev", "board_id"), filepath.Join(dir, "sys", "dev", "up"), outside} {
			_, err := rd.ReadString(p)
			assert.ErrorIs(t, err, ErrOutside, p)
			assert.Contains(t, err.Error(), p)
			_, err = rd.ReadUintKept(p)
			assert.ErrorIs(t, err, ErrOutside, p)
		}
	}
}

// TestMaxKept: past the cap, shared by a Reader and its forks, files are read with
// open-read-close and nothing more is kept; closing kept files makes room again.
func TestMaxKept(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 6 {
		p := filepath.Join(dir, strconv.Itoa(i))
		require.NoError(t, os.WriteFile(p, []byte(strconv.Itoa(i)+"\n"), 0o644))
		paths = append(paths, p)
	}
	var r Reader
	r.SetMaxKept(3)
	f := r.Fork()
	for i, p := range paths {
		rd := &r
		if i%2 == 1 {
			rd = f
		}
		for range 2 {
			v, err := rd.ReadUintKept(p)
			require.NoError(t, err)
			assert.Equal(t, uint64(i), v)
		}
	}
	assert.Equal(t, 3, r.Kept()+f.Kept(), "kept up to the cap")
	assert.Equal(t, int64(3+3*2), r.Opened(), "the others opened on every read")
	f.CloseKept()
	_, err := f.ReadUintKept(paths[5])
	require.NoError(t, err)
	assert.Equal(t, 1, f.Kept(), "room again after a close")
}

func TestValidateRootPath(t *testing.T) {
	for _, ok := range []string{"", "/", "/hostfs"} {
		if err := ValidateRootPath(ok); err != nil {
			t.Errorf("ValidateRootPath(%q) = %v, want nil", ok, err)
		}
	}
	err := ValidateRootPath("hostfs")
	if err == nil || err.Error() != `root_path: must be an absolute path, got "hostfs"` {
		t.Errorf("ValidateRootPath(hostfs) = %v", err)
	}
	if got := HostRoot(""); got != "/" {
		t.Errorf("HostRoot(\"\") = %q", got)
	}
}
