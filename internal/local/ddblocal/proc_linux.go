package ddblocal

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// sysProcAttr puts the server in its own process group (so Stop can end
// everything it runs) and has the kernel kill it when the thread that
// started it dies, which happens when the Go process exits for any reason.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends SIGTERM (or SIGKILL) to the process group led by pid.
func signalGroup(pid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}

// ownsPort reports whether process pid holds the listening TCP socket on
// port, from /proc/net/tcp{,6} and /proc/PID/fd.
func ownsPort(pid, port int) bool {
	inodes := map[string]bool{}
	hexPort := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !strings.HasSuffix(fields[1], hexPort) {
				continue
			}
			inodes["socket:["+fields[9]+"]"] = true
		}
		fh.Close()
	}
	if len(inodes) == 0 {
		return false
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if link, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && inodes[link] {
			return true
		}
	}
	return false
}
