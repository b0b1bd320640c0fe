// Package xraytest is a stand-in X-Ray daemon for tests: a UDP socket on
// 127.0.0.1 that keeps the datagrams a traced client sends it.
package xraytest

import (
	"errors"
	"net"
	"testing"
	"time"
)

// Daemon receives the datagrams sent to Addr.
type Daemon struct {
	conn net.PacketConn
}

// NewDaemon listens on a free loopback port until the test ends.
func NewDaemon(t testing.TB) *Daemon {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &Daemon{conn: conn}
}

// Addr is the daemon's address, as AWS_XRAY_DAEMON_ADDRESS names it.
func (d *Daemon) Addr() string { return d.conn.LocalAddr().String() }

// Close stops listening: nothing receives on Addr any more.
func (d *Daemon) Close() error { return d.conn.Close() }

// Next returns the next datagram, header line included, or nil when none
// comes within wait.
func (d *Daemon) Next(t testing.TB, wait time.Duration) []byte {
	t.Helper()
	buf := make([]byte, 64<<10)
	_ = d.conn.SetReadDeadline(time.Now().Add(wait))
	n, _, err := d.conn.ReadFrom(buf)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}
