package sysfs

import (
	"bytes"
	"slices"
	"strings"
)

// maxEnviron bounds what is read of a process's environment: Linux caps argv and envp together
// at a quarter of the stack limit (fs/exec.c, get_arg_page), 2 MiB under the usual 8 MiB.
const maxEnviron = 4 << 20

// ProcEnviron reads a process's environment, /proc/<pid>/environ (NUL-separated NAME=value, as
// execve passed them; proc(5), fs/proc/base.c environ_read), and returns the variables named, or
// every one when none is named. It is the one reading of it, for the owner resolver's job ids and
// the nccl receiver's GPU of a rank.
func ProcEnviron(path string, names ...string) (map[string]string, error) {
	b, err := ReadFile(path, maxEnviron)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		k, v, ok := strings.Cut(string(kv), "=")
		if !ok || len(names) > 0 && !slices.Contains(names, k) {
			continue
		}
		env[k] = v
	}
	return env, nil
}
