//go:build unix && !linux

package idemtest

import "syscall"

// sysProcAttr puts the server in its own process group, so that Stop ends
// all it runs. There is no parent-death signal outside Linux.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM, or SIGKILL, to the process group led by pid.
func signalGroup(pid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}

// ownsPort cannot be checked portably here: an answer on the port is
// taken as the server's own.
func ownsPort(pid, port int) bool { return true }
