package main

import (
	"os/exec"
	"syscall"
)

// stopWithParent has the kernel send the gateway SIGTERM when the load generator dies, however it
// dies (a broken stdout pipe, a kill): a measurement never leaves a gateway behind.
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
