package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procSample is a process's CPU time and memory from /proc (proc(5)): utime+stime in clock
// ticks, VmRSS and VmHWM (peak RSS) in KiB.
type procSample struct {
	ticks    int64
	rssKiB   int64
	peakKiB  int64
	hasTicks bool
}

// clockTicks is USER_HZ, 100 on every Linux architecture the collector is built for.
const clockTicks = 100

func readProc(pid int) (procSample, error) {
	var s procSample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name (field 2) may hold spaces: the fields after it start past the last ')'.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) > 13 {
		u, _ := strconv.ParseInt(fields[11], 10, 64) // utime, field 14
		k, _ := strconv.ParseInt(fields[12], 10, 64) // stime, field 15
		s.ticks, s.hasTicks = u+k, true
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			s.rssKiB = n
		case "VmHWM":
			s.peakKiB = n
		}
	}
	return s, nil
}
