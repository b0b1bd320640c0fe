//go:build integration && linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// envRunLocal makes the test binary run the local server instead of the
// tests: the restart test starts it as a child process it can kill.
const envRunLocal = "CMD_LOCAL_RUN_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(envRunLocal) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// Executions of the local stack live in its process. When the process is
// killed (kill -9, no shutdown) in the middle of traffic and started again
// on the same data directory, every transfer still ends terminal, money is
// conserved, and, since nothing was rejected, every transfer completes
// instead of being reversed: the sweeper restarts the lost executions from
// their records. With the local defaults this happens within 60 s of the
// restart.
func TestKilledStackRecoversOnRestart(t *testing.T) {
	dataDir := t.TempDir()
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	first := startLocal(t, port, dataDir)
	waitReady(t, base, 90*time.Second)

	const transfers = 40
	type sent struct{ key, body string }
	all := make([]sent, transfers)
	for i := range all {
		src, dst := "demo-alice", "demo-bob"
		if i%2 == 1 {
			src, dst = dst, src
		}
		all[i] = sent{
			key:  fmt.Sprintf("restart-%d-%d", time.Now().UnixNano(), i),
			body: fmt.Sprintf(`{"sourceAccountId":%q,"destinationAccountId":%q,"amount":%d,"currency":"EUR"}`, src, dst, 100+i),
		}
	}

	// Traffic, and the kill once half of it was answered.
	var (
		wg       sync.WaitGroup
		answered = make(chan struct{}, transfers)
	)
	client := &http.Client{Timeout: 10 * time.Second}
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if status, _, err := post(client, base, s.key, s.body); err == nil && status < 500 {
				answered <- struct{}{}
			}
		}()
	}
	for range transfers / 2 {
		select {
		case <-answered:
		case <-time.After(60 * time.Second):
			t.Fatal("half of the transfers were not answered within 60 s")
		}
	}
	first.kill(t)
	wg.Wait()

	// Restart on the same data. The clients send every request again with
	// its key, as a client does that did not see (or doubts) an answer.
	restarted := time.Now()
	startLocal(t, port, dataDir)
	waitReady(t, base, 90*time.Second)

	deadline := time.Now().Add(75 * time.Second)
	var completed, pending int
	delta := map[string]int64{}
	for _, s := range all {
		for try := 0; ; try++ {
			status, body, err := post(client, base, s.key, s.body)
			if err == nil && status >= 500 {
				t.Fatalf("%s answered %d %s after the restart", s.key, status, body)
			}
			var tr struct {
				Status               string `json:"status"`
				SourceAccountID      string `json:"sourceAccountId"`
				DestinationAccountID string `json:"destinationAccountId"`
				Amount               int64  `json:"amount"`
				Transfer             *struct {
					Status string `json:"status"`
				} `json:"transfer"`
			}
			if err == nil {
				_ = json.Unmarshal([]byte(body), &tr)
			}
			if try == 0 && (err != nil || status == http.StatusAccepted) {
				pending++
			}
			if err == nil && status == http.StatusOK && tr.Status == "COMPLETED" {
				completed++
				delta[tr.SourceAccountID] -= tr.Amount
				delta[tr.DestinationAccountID] += tr.Amount
				break
			}
			if err == nil && status == http.StatusUnprocessableEntity {
				t.Errorf("%s failed after the restart: %s", s.key, body)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still not settled %s after the restart: %d %s (err %v)", s.key, time.Since(restarted).Round(time.Second), status, body, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	t.Logf("all %d transfers settled %s after the restart; %d were still pending (or unknown) when the clients asked again", transfers, time.Since(restarted).Round(time.Second), pending)
	if completed != transfers {
		t.Errorf("%d of %d transfers completed", completed, transfers)
	}
	for _, id := range []string{"demo-alice", "demo-bob"} {
		balance := accountBalance(t, client, base, id)
		if want := 100000 + delta[id]; balance != want {
			t.Errorf("%s holds %d, want %d (opening 100000 plus the completed transfers)", id, balance, want)
		}
	}
}

// local is a local server started as a child process.
type local struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startLocal runs the local server (this test binary in server mode) on
// port with its DynamoDB Local data in dataDir, with the local defaults.
// It is killed when the test ends.
func startLocal(t *testing.T, port int, dataDir string) *local {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-port", fmt.Sprint(port), "-data", dataDir)
	cmd.Env = append(os.Environ(), envRunLocal+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the local server: %v", err)
	}
	l := &local{cmd: cmd, done: make(chan struct{})}
	go func() {
		// Keep the server's log for a failing test.
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.Contains(line, "level=ERROR") {
				t.Logf("local server: %s", line)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(l.done)
	}()
	t.Cleanup(func() { l.kill(t) })
	return l
}

// kill sends SIGKILL (no shutdown of any kind) and waits for the process
// to be gone; DynamoDB Local dies with it (Pdeathsig).
func (l *local) kill(t *testing.T) {
	t.Helper()
	select {
	case <-l.done:
		return
	default:
	}
	_ = l.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-l.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed local server did not exit")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitReady polls the API until the demo account answers.
func waitReady(t *testing.T, base string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/accounts/demo-alice", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the local server did not serve %s within %s", base, within)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func post(client *http.Client, base, key, body string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/transfers", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func accountBalance(t *testing.T, client *http.Client, base, id string) int64 {
	t.Helper()
	resp, err := client.Get(base + "/accounts/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		Balance int64 `json:"balance"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /accounts/%s: %d %v", id, resp.StatusCode, err)
	}
	return a.Balance
}
