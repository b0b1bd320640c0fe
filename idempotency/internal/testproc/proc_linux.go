package testproc

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// sysProcAttr puts the server in its own process group, so that
// Proc.Stop ends all it runs, and has the kernel kill it when the thread
// that started it ends, which it does when the test binary exits for any
// reason.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// OwnsPort reports whether process pid holds the listening TCP socket of
// port (from /proc/net/tcp, /proc/net/tcp6 and /proc/PID/fd), so that an
// answer from another server on the same port is not taken for its own.
func OwnsPort(pid, port int) bool {
	sockets := map[string]bool{}
	suffix := fmt.Sprintf(":%04X", port)
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) >= 10 && fields[3] == "0A" && strings.HasSuffix(fields[1], suffix) {
				sockets["socket:["+fields[9]+"]"] = true
			}
		}
		_ = f.Close()
	}
	if len(sockets) == 0 {
		return false
	}
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fds)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if link, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && sockets[link] {
			return true
		}
	}
	return false
}
