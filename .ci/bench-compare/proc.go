package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat. It is 100 on every Linux
// architecture Go supports (the kernel exports it as a constant; sysconf(_SC_CLK_TCK) needs cgo).
const clockTicks = 100

// proc is one measured process: a server on 127.0.0.1 whose /metrics we fetch.
type proc struct {
	name string
	cmd  *exec.Cmd
	url  string
	log  string
}

// start runs argv with its output in dir/<name>.log.
func start(name, dir, url string, env []string, argv ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	// Its own process group, so that a stop signal reaches it and nothing else.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	f.Close()
	return &proc{name: name, cmd: cmd, url: url, log: logPath}, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop ends the process (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// pause and resume stop the process while the other one is measured, so that the two never
// compete for the CPUs during a measurement.
func (p *proc) pause() error  { return p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *proc) resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// cpu returns the process's user+system CPU time, all threads, from /proc/<pid>/stat.
func (p *proc) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its closing parenthesis start
	// at field 3 (state). utime and stime are fields 14 and 15 (proc(5)).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", p.pid())
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", p.pid(), len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", p.pid(), err)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// status returns a field of /proc/<pid>/status in KiB (VmHWM, VmRSS).
func (p *proc) status(field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb := strings.TrimSuffix(strings.TrimSpace(rest), " kB")
			return strconv.ParseInt(kb, 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", p.pid(), field)
}

var client = &http.Client{Timeout: 10 * time.Second}

// fetch reads /metrics once and returns the body.
func (p *proc) fetch() ([]byte, error) {
	resp, err := client.Get(p.url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", p.url, resp.StatusCode)
	}
	return b, nil
}

// waitFor fetches /metrics until the body contains want (the first scrape's data), at most timeout.
func (p *proc) waitFor(want string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		b, err := p.fetch()
		if err == nil && bytes.Contains(b, []byte(want)) {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("no %q in the answer yet", want)
		}
		last = err
		if p.cmd.ProcessState != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s did not serve %s within %s (last: %v; log: %s)", p.name, want, timeout, last, p.log)
}

// freePort returns a loopback address no one listens on.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
