package redistest

import "syscall"

// sysProcAttr puts the server in its own process group, so that Stop ends
// all it runs, and has the kernel kill it when the thread that started it
// ends, which it does when the test binary exits for any reason.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
