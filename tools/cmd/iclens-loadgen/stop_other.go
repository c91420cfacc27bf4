//go:build !linux

package main

import "os/exec"

// stopWithParent: only Linux has a parent-death signal; elsewhere the deferred stop ends it.
func stopWithParent(*exec.Cmd) {}
