//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

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

// cpu returns the process's CPU time: the sum over its threads of the time the scheduler ran them
// (/proc/<pid>/task/<tid>/schedstat, nanoseconds), read through prometheus/procfs. utime+stime of
// /proc/<pid>/stat counts in 10 ms ticks, too coarse for an idle collector over a minute; the
// schedstat sum is exact. Go does not end its threads, so no thread's time is lost by summing the
// live ones.
func (p *proc) cpu() (time.Duration, error) {
	threads, err := procfs.AllThreads(p.pid())
	if err != nil {
		return 0, err
	}
	var ns uint64
	for _, t := range threads {
		st, err := t.Schedstat()
		if err != nil {
			return 0, fmt.Errorf("thread %d of %s: %w", t.PID, p.name, err)
		}
		ns += st.RunningNanoseconds
	}
	return time.Duration(ns), nil
}

// peakRSS returns the process's peak resident set size (VmHWM), in KiB.
func (p *proc) peakRSS() (int64, error) {
	return p.memKiB(func(st procfs.ProcStatus) uint64 { return st.VmHWM })
}

// rss returns the process's resident set size (VmRSS), in KiB.
func (p *proc) rss() (int64, error) {
	return p.memKiB(func(st procfs.ProcStatus) uint64 { return st.VmRSS })
}

func (p *proc) memKiB(field func(procfs.ProcStatus) uint64) (int64, error) {
	pr, err := procfs.NewProc(p.pid())
	if err != nil {
		return 0, err
	}
	st, err := pr.NewStatus()
	if err != nil {
		return 0, err
	}
	return int64(field(st) / 1024), nil
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
