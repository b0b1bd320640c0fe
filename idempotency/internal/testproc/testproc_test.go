//go:build unix

package testproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// helperEnv selects what this test binary does when a test runs it as a
// child process, portEnv the port it serves on.
const (
	helperEnv = "TESTPROC_HELPER"
	portEnv   = "TESTPROC_PORT"
)

var (
	errExited   = errors.New("helper exited")
	errNotReady = errors.New("helper did not answer")
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		helperMain(mode)
		return
	}
	os.Exit(m.Run())
}

// helperMain is the child process: a server of mode.
func helperMain(mode string) {
	switch mode {
	case "taken":
		fmt.Println("bind: Address already in use")
		os.Exit(1)
	case "exit":
		fmt.Println("bye")
		os.Exit(3)
	case "group":
		// A child of its own, in its process group, that Stop must end too.
		child := command("sleep", 0)
		if err := child.Start(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("child %d\n", child.Process.Pid)
	case "sleep":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
	case "hold":
		// Starts a server and lives until it is killed.
		p, err := Start(context.Background(), spec(func(int) string { return "serve" }))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("pid %d\n", p.PID())
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv(portEnv))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("serving")
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		_ = c.Close()
	}
}

// command runs this test binary as a helper of mode on port.
func command(mode string, port int) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, portEnv+"="+strconv.Itoa(port))
	return cmd
}

// spec runs helpers, of the mode that modeOf gives for each attempt.
func spec(modeOf func(attempt int) string) Spec {
	var attempts atomic.Int32
	return Spec{
		Name: "helper",
		Command: func(port int) *exec.Cmd {
			return command(modeOf(int(attempts.Add(1))), port)
		},
		Ready: func(ctx context.Context, port, pid int) bool {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				return false
			}
			_ = c.Close()
			return OwnsPort(pid, port)
		},
		Addr:      func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) },
		PortTaken: func(out string) bool { return strings.Contains(out, "Address already in use") },
		Attempts:  3,
		Poll:      10 * time.Millisecond,
		Grace:     5 * time.Second,
		Exited:    errExited,
		NotReady:  errNotReady,
	}
}

// alive reports whether process pid runs: it exists and, where /proc
// tells, is not a zombie waiting for a parent to reap it.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) || runtime.GOOS != "linux"
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// gone waits until process pid has ended.
func gone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s %d still runs", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStart(t *testing.T) {
	for _, tt := range []struct {
		name         string
		modes        []string // of each attempt, the last for those after
		noPortTaken  bool
		wantErr      error
		wantAttempts int
		wantOutput   string
	}{
		{name: "serves", modes: []string{"serve"}, wantAttempts: 1, wantOutput: "serving"},
		{name: "exits", modes: []string{"exit"}, wantErr: errExited, wantAttempts: 1, wantOutput: "bye"},
		{name: "port taken once", modes: []string{"taken", "serve"}, wantAttempts: 2, wantOutput: "serving"},
		{name: "port taken every time", modes: []string{"taken"}, wantErr: errExited, wantAttempts: 3, wantOutput: "Address already in use"},
		{name: "port taken, not told how to tell", modes: []string{"taken"}, noPortTaken: true, wantErr: errExited, wantAttempts: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			attempts := 0
			s := spec(func(n int) string {
				attempts = n
				return tt.modes[min(n, len(tt.modes))-1]
			})
			if tt.noPortTaken {
				s.PortTaken = nil
			}
			p, err := Start(t.Context(), s)
			if attempts != tt.wantAttempts {
				t.Errorf("%d attempts, want %d", attempts, tt.wantAttempts)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantOutput) {
					t.Fatalf("Start = %v, want %v saying %q", err, tt.wantErr, tt.wantOutput)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Output(), tt.wantOutput) {
				t.Errorf("Output = %q, want %q", p.Output(), tt.wantOutput)
			}
			if !OwnsPort(p.PID(), p.Port()) && runtime.GOOS == "linux" {
				t.Errorf("process %d does not own port %d", p.PID(), p.Port())
			}
			if err := p.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := p.Stop(); err != nil {
				t.Fatalf("a second Stop: %v", err)
			}
			if alive(p.PID()) {
				t.Errorf("process %d still runs after Stop", p.PID())
			}
		})
	}
}

// TestNotReady: a server that never answers fails with NotReady when ctx
// ends, and is stopped.
func TestNotReady(t *testing.T) {
	s := spec(func(int) string { return "serve" })
	var pid int
	s.Ready = func(_ context.Context, _, p int) bool { pid = p; return false }
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := Start(ctx, s); !errors.Is(err, errNotReady) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start = %v, want %v", err, errNotReady)
	}
	if pid == 0 || alive(pid) {
		t.Errorf("process %d still runs after a failed start", pid)
	}
}

func TestStop(t *testing.T) {
	t.Run("its process group", func(t *testing.T) {
		p, err := Start(t.Context(), spec(func(int) string { return "group" }))
		if err != nil {
			t.Fatal(err)
		}
		var child int
		if _, err := fmt.Sscanf(p.Output(), "child %d", &child); err != nil || !alive(child) {
			t.Fatalf("no child in the output %q: %v", p.Output(), err)
		}
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
		gone(t, child, "the server's child")
	})
	t.Run("SIGKILL after the grace period", func(t *testing.T) {
		s := spec(func(int) string { return "stubborn" })
		s.Grace = 200 * time.Millisecond
		p, err := Start(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d < s.Grace {
			t.Errorf("Stop took %v, less than the grace period %v of a server that ignores SIGTERM", d, s.Grace)
		}
		if alive(p.PID()) {
			t.Errorf("process %d still runs after Stop", p.PID())
		}
	})
	t.Run("a server that exited", func(t *testing.T) {
		p, err := Start(t.Context(), spec(func(int) string { return "serve" }))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
		if err := p.Stop(); !errors.Is(err, errExited) || !strings.Contains(err.Error(), "serving") {
			t.Errorf("Stop = %v, want %v with its output", err, errExited)
		}
	})
}

// TestOwnsPort: a port is owned by the process that listens on it only.
func TestOwnsPort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("OwnsPort checks only on Linux")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if !OwnsPort(os.Getpid(), port) {
		t.Errorf("OwnsPort(self, %d) = false", port)
	}
	if OwnsPort(os.Getppid(), port) {
		t.Errorf("OwnsPort(parent, %d) = true", port)
	}
	free, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if OwnsPort(os.Getpid(), free) {
		t.Errorf("OwnsPort(self, free port %d) = true", free)
	}
}

// TestServerDiesWithTestBinary: on Linux the kernel ends the server when
// the test binary that started it is killed.
func TestServerDiesWithTestBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	cmd := command("hold", 0)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	sc := bufio.NewScanner(stdout)
	for pid == 0 && sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the helper printed no server pid")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	gone(t, pid, "the server of a killed test binary")
}
