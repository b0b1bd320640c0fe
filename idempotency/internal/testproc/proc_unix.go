//go:build unix && !linux

package testproc

import "syscall"

// sysProcAttr puts the server in its own process group, so that Proc.Stop
// ends all it runs. There is no parent-death signal outside Linux.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// OwnsPort cannot be checked portably here: an answer on the port is
// taken as the server's own.
func OwnsPort(pid, port int) bool { return true }
