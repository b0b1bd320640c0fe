//go:build !unix

package testproc

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup kills the process: there are no process groups here.
func signalGroup(pid int, _ bool) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// OwnsPort cannot be checked here: an answer on the port is taken as the
// server's own.
func OwnsPort(pid, port int) bool { return true }
