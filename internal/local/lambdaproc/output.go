package lambdaproc

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"
)

// maxLineBytes bounds a line of output kept before it is logged: a longer
// line is logged in pieces.
const maxLineBytes = 64 << 10

// lineLogger logs each line written to it as one record, the line as its
// message, with the stream's name.
type lineLogger struct {
	log    *slog.Logger
	stream string

	mu  sync.Mutex
	buf []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) >= maxLineBytes {
				l.emit(l.buf)
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

// flush logs what is left of an unterminated last line.
func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}

func (l *lineLogger) emit(line []byte) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) == 0 {
		return
	}
	l.log.LogAttrs(context.Background(), slog.LevelInfo, string(line), slog.String("stream", l.stream))
}

// lockedWriter serialises the writes of the processes that share one
// writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Tail keeps the last bytes written to it: a process's last output, for
// the log record or the error that reports its end. It is safe for
// concurrent use (a process's stdout and stderr at once).
type Tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTail keeps the last max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String is the bytes kept.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
