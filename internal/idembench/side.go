package idembench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// maxLine bounds a protocol line: a result carries every latency.
const maxLine = 64 << 20

// Serve is a side's end of the protocol: it writes hello, then, for each
// Command read from r (one JSON line), runs it and writes its Result
// (one JSON line; Result.Error says why it failed), until r ends.
func Serve(ctx context.Context, r io.Reader, w io.Writer, hello Hello, run func(context.Context, Command) (Result, error)) error {
	enc := json.NewEncoder(w)
	if err := enc.Encode(hello); err != nil {
		return err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		var c Command
		var res Result
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			res.Error = fmt.Sprintf("read command: %v", err)
		} else if res, err = run(ctx, c); err != nil {
			res = Result{Scenario: c.Scenario, Error: err.Error()}
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Side is the benchmark's end of a side running in its own process.
type Side struct {
	Name  string
	Hello Hello

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Scanner
	stderr *tail
	done   chan struct{}
	waited error
	mu     sync.Mutex
}

// StartSide starts argv as a side named name, with env added to this
// process's environment, and reads its Hello.
func StartSide(ctx context.Context, name string, argv, env []string) (*Side, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	s := &Side{Name: name, cmd: cmd, stderr: &tail{}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.out = bufio.NewScanner(stdout)
	s.out.Buffer(make([]byte, 0, 64<<10), maxLine)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s side: start %s: %w", name, argv[0], err)
	}
	go func() {
		s.waited = cmd.Wait()
		close(s.done)
	}()
	hello := make(chan error, 1)
	go func() { hello <- s.read(&s.Hello) }()
	select {
	case err = <-hello:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%s side: %w", name, err)
	}
	return s, nil
}

// read decodes the side's next line into v.
func (s *Side) read(v any) error {
	if !s.out.Scan() {
		err := s.out.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		select {
		case <-s.done:
			return fmt.Errorf("the process ended (%v): %w\n%s", s.waited, err, s.stderr)
		case <-time.After(5 * time.Second):
			return fmt.Errorf("no answer: %w\n%s", err, s.stderr)
		}
	}
	if err := json.Unmarshal(s.out.Bytes(), v); err != nil {
		return fmt.Errorf("answer %.200q: %w\n%s", s.out.Text(), err, s.stderr)
	}
	return nil
}

// Run sends c and returns the side's Result; a Result with an Error is
// an error.
func (s *Side) Run(ctx context.Context, c Command) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := json.Marshal(c)
	if err != nil {
		return Result{}, err
	}
	if _, err := s.stdin.Write(append(b, '\n')); err != nil {
		return Result{}, fmt.Errorf("%s side: send %s: %w\n%s", s.Name, c.Scenario, err, s.stderr)
	}
	var res Result
	if err := s.read(&res); err != nil {
		return Result{}, fmt.Errorf("%s side, %s: %w", s.Name, c.Scenario, err)
	}
	if res.Error != "" {
		return Result{}, fmt.Errorf("%s side, %s: %s", s.Name, c.Scenario, res.Error)
	}
	if len(res.LatenciesNs) != c.Requests || res.ElapsedNs <= 0 {
		return Result{}, fmt.Errorf("%s side, %s: %d latencies in %d ns for %d requests", s.Name, c.Scenario, len(res.LatenciesNs), res.ElapsedNs, c.Requests)
	}
	return res, nil
}

// Close ends the side: its input closes, and it is killed if it has not
// ended within 10 s.
func (s *Side) Close() error {
	s.stdin.Close()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	var exit *exec.ExitError
	if s.waited != nil && !errors.As(s.waited, &exit) {
		return s.waited
	}
	if s.waited != nil {
		return fmt.Errorf("%s side: %w\n%s", s.Name, s.waited, s.stderr)
	}
	return nil
}

// tail keeps the last few kilobytes a side wrote to stderr.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 8 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = t.buf[len(t.buf)-tailSize:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return "(nothing on stderr)"
	}
	return "stderr: " + s
}
