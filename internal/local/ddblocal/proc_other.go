//go:build !unix

package ddblocal

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup kills the process (no process groups here).
func signalGroup(pid int, _ bool) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func ownsPort(pid, port int) bool { return true }
