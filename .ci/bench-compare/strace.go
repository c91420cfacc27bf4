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

// opens counts what a process opened below the fixture's sys directory while it was traced.
type opens struct {
	files   int // regular files opened (each is then read: one sysfs show() call on a real node)
	dirs    int // directories opened to be listed
	failed  int // opens that failed (ENOENT of an optional directory, ...)
	scrapes int // opens of <sys>/class/infiniband: both programs list it exactly once per scrape
}

func (o opens) perScrape(n int) float64 {
	if o.scrapes == 0 {
		return 0
	}
	return float64(n) / float64(o.scrapes)
}

// traceOpens runs strace on pid (all threads, open/openat only) while during runs, and counts the
// opens below sys. strace is the public tool the issue names; it slows the traced process, which
// is why no CPU time is measured while it is attached.
func traceOpens(pid int, sys, out string, during func() error) (opens, error) {
	cmd := exec.Command("strace", "-f", "-e", "trace=open,openat", "-o", out, "-p", fmt.Sprint(pid))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return opens{}, err
	}
	if err := cmd.Start(); err != nil {
		return opens{}, fmt.Errorf("strace (apt-get install -y strace): %w", err)
	}
	// strace says "Process N attached" once per thread; wait for the first, then a little for the
	// rest of the threads, so that no open of the measured window is missed.
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
			return opens{}, err
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return opens{}, fmt.Errorf("strace did not attach to %d within 10 s", pid)
	}
	time.Sleep(500 * time.Millisecond)
	derr := during()
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	if derr != nil {
		return opens{}, derr
	}
	return countOpens(out, sys)
}

// countOpens parses strace's output. With -f, a call interrupted by another thread's is printed in
// two lines ("openat(... <unfinished ...>" and "<... openat resumed>) = 7"), joined here by thread id.
func countOpens(path, sys string) (opens, error) {
	f, err := os.Open(path)
	if err != nil {
		return opens{}, err
	}
	defer f.Close()
	var o opens
	pending := map[string]string{}
	classDir := `"` + sys + `/class/infiniband"`
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
		if strings.HasPrefix(rest, "<... open") {
			start, ok := pending[tid]
			if !ok {
				continue
			}
			delete(pending, tid)
			_, res, _ := strings.Cut(rest, "resumed>")
			rest = strings.TrimSuffix(start, "<unfinished ...>") + res
		}
		if !strings.HasPrefix(rest, "open") || !strings.Contains(rest, `"`+sys) {
			continue
		}
		i := strings.LastIndex(rest, " = ")
		if i < 0 {
			continue
		}
		switch {
		case strings.HasPrefix(rest[i+3:], "-1"):
			o.failed++
		case strings.Contains(rest, "O_DIRECTORY"):
			o.dirs++
			if strings.Contains(rest, classDir+",") {
				o.scrapes++
			}
		default:
			o.files++
		}
	}
	return o, sc.Err()
}
