//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// fileIO counts what a process did below the fixture's sys directory while it was traced.
type fileIO struct {
	reads   int // reads of a file that returned data: each one show() call on a real node
	files   int // regular files opened
	dirs    int // directories opened to be listed
	failed  int // opens that failed (ENOENT of an optional directory, ...)
	scrapes int // reads of the marker file, which both programs read exactly once per scrape
}

// scrapeMarker ends the resolved path of the file that counts scrapes: port 1 of mlx5_0's state,
// which node_exporter reads (open, read, close) and the collector reads (pread of a kept
// descriptor) once per scrape.
const scrapeMarker = "/infiniband/mlx5_0/ports/1/state"

func (o fileIO) perScrape(n int) float64 {
	if o.scrapes == 0 {
		return 0
	}
	return float64(n) / float64(o.scrapes)
}

// traceIO runs strace on pid (all threads; open, openat, read and pread64, with -y so that each
// read names the file behind its descriptor) while during runs, and counts the opens and reads
// below sys. strace is the public tool the issue names; it slows the traced process, which is why
// no CPU time is measured while it is attached. Reads are counted as well as opens because the
// collector keeps the files it reads on every scrape open and reads them again with pread.
func traceIO(pid int, sys, out string, during func() error) (fileIO, error) {
	cmd := exec.Command("strace", "-f", "-y", "-e", "trace=open,openat,read,pread64", "-o", out, "-p", fmt.Sprint(pid))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return fileIO{}, err
	}
	if err := cmd.Start(); err != nil {
		return fileIO{}, fmt.Errorf("strace (apt-get install -y strace): %w", err)
	}
	// strace says "Process N attached" once per thread; wait for the first, then a little for the
	// rest of the threads, so that nothing of the measured window is missed.
	attached := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if !sent && strings.Contains(sc.Text(), "attached") {
				attached <- nil
				sent = true
			}
		}
		if !sent {
			attached <- fmt.Errorf("strace did not attach to %d (ptrace refused? kernel.yama.ptrace_scope, CAP_SYS_PTRACE)", pid)
		}
	}()
	select {
	case err := <-attached:
		if err != nil {
			_ = cmd.Wait()
			return fileIO{}, err
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fileIO{}, fmt.Errorf("strace did not attach to %d within 10 s", pid)
	}
	time.Sleep(500 * time.Millisecond)
	derr := during()
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	if derr != nil {
		return fileIO{}, derr
	}
	return countIO(out, sys)
}

// countIO parses strace's output. With -f, a call interrupted by another thread's is printed in
// two lines ("openat(... <unfinished ...>" and "<... openat resumed>) = 7"), joined here by thread
// id. With -y a descriptor is printed with its path: read(7</.../ports/1/state>, "4: ACTIVE\n", 4096) = 10.
func countIO(path, sys string) (fileIO, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileIO{}, err
	}
	defer f.Close()
	var o fileIO
	pending := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		// strace pads the thread id: "3570  openat(...", "15315 openat(...".
		tid, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		if strings.HasSuffix(rest, "<unfinished ...>") {
			pending[tid] = rest
			continue
		}
		if strings.HasPrefix(rest, "<... ") {
			start, ok := pending[tid]
			if !ok {
				continue
			}
			delete(pending, tid)
			_, res, _ := strings.Cut(rest, "resumed>")
			rest = strings.TrimSuffix(start, "<unfinished ...>") + res
		}
		i := strings.LastIndex(rest, " = ")
		if i < 0 {
			continue
		}
		result := rest[i+3:]
		switch {
		case strings.HasPrefix(rest, "read(") || strings.HasPrefix(rest, "pread64("):
			file := fdPath(rest)
			if !strings.HasPrefix(file, sys+"/") || strings.HasPrefix(result, "-1") || strings.HasPrefix(result, "0") {
				continue // not the fixture's, failed, or end of file
			}
			o.reads++
			if strings.HasSuffix(file, scrapeMarker) {
				o.scrapes++
			}
		case strings.HasPrefix(rest, "open") && strings.Contains(rest, `"`+sys):
			switch {
			case strings.HasPrefix(result, "-1"):
				o.failed++
			case strings.Contains(rest, "O_DIRECTORY"):
				o.dirs++
			default:
				o.files++
			}
		}
	}
	return o, sc.Err()
}

// fdPath returns the path strace -y prints with a call's first argument, a descriptor:
// "read(7</sys/x>, ..." yields "/sys/x".
func fdPath(call string) string {
	_, after, ok := strings.Cut(call, "<")
	if !ok {
		return ""
	}
	p, _, _ := strings.Cut(after, ">")
	return p
}
