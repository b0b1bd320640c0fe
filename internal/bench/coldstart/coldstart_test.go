package coldstart

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const fakePackage = "./internal/bench/coldstart/testdata/fake"

// binaries builds hello and the fake function for this machine, once per
// test binary, into a directory kept for the run.
var binaries = struct {
	once        sync.Once
	dir         string
	hello, fake string
	err         error
}{}

func hostBinaries(t *testing.T) (hello, fake string) {
	t.Helper()
	binaries.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			binaries.err = err
			return
		}
		if binaries.dir, err = os.MkdirTemp("", "coldstart-test-"); err != nil {
			binaries.err = err
			return
		}
		bins, err := build(context.Background(), Options{ModuleRoot: root, Dir: binaries.dir, Go: "go"},
			[]Function{{Name: HelloName, Package: HelloPackage}, {Name: "fake", Package: fakePackage}}, runtime.GOOS, runtime.GOARCH)
		if err != nil {
			binaries.err = err
			return
		}
		binaries.hello, binaries.fake = bins[0], bins[1]
	})
	if binaries.err != nil {
		t.Fatal(binaries.err)
	}
	return binaries.hello, binaries.fake
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}

// The Runtime API hands out its one event with Lambda's headers, takes
// one answer to it, and holds the runtime's next GET.
func TestRuntimeAPI(t *testing.T) {
	tests := []struct {
		name       string
		path       string // after /invocation/{id}; "" is the right id
		id         string
		errorType  string
		wantStatus int
		wantFailed bool
	}{
		{name: "response", path: "response", wantStatus: http.StatusAccepted},
		{name: "error", path: "error", errorType: "Refused", wantStatus: http.StatusAccepted, wantFailed: true},
		{name: "unknown request id", path: "response", id: "nope", wantStatus: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event := []byte(`{"n":1}`)
			a, err := newRuntimeAPI("fn", "eu-west-1", event, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer a.close()
			base := "http://" + a.addr() + "/2018-06-01/runtime/invocation/"

			before := time.Now()
			resp, err := http.Get(base + "next")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, event) {
				t.Fatalf("next = %d %s, want 200 %s", resp.StatusCode, body, event)
			}
			id := resp.Header.Get("Lambda-Runtime-Aws-Request-Id")
			deadline, _ := strconv.ParseInt(resp.Header.Get("Lambda-Runtime-Deadline-Ms"), 10, 64)
			switch {
			case id == "":
				t.Error("no request id")
			case deadline < before.Add(time.Minute).UnixMilli()-1000:
				t.Errorf("deadline %d, want about a minute from now", deadline)
			case resp.Header.Get("Lambda-Runtime-Invoked-Function-Arn") != "arn:aws:lambda:eu-west-1:123456789012:function:fn":
				t.Errorf("function ARN %q", resp.Header.Get("Lambda-Runtime-Invoked-Function-Arn"))
			case !strings.HasPrefix(resp.Header.Get("Lambda-Runtime-Trace-Id"), "Root=1-") ||
				!strings.HasSuffix(resp.Header.Get("Lambda-Runtime-Trace-Id"), ";Sampled=1"):
				t.Errorf("trace header %q", resp.Header.Get("Lambda-Runtime-Trace-Id"))
			}
			select {
			case <-a.ready:
			default:
				t.Error("the first GET /next was not taken as ready")
			}

			if tt.id != "" {
				id = tt.id
			}
			req, _ := http.NewRequest(http.MethodPost, base+id+"/"+tt.path, strings.NewReader(`"ok"`))
			req.Header.Set("Lambda-Runtime-Function-Error-Type", tt.errorType)
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("POST %s = %d, want %d", tt.path, resp.StatusCode, tt.wantStatus)
			}
			if tt.wantStatus != http.StatusAccepted {
				return
			}
			ans := <-a.answers
			if ans.failed != tt.wantFailed || string(ans.payload) != `"ok"` || ans.errorType != tt.errorType {
				t.Errorf("answer %+v, want failed=%v payload \"ok\" type %q", ans, tt.wantFailed, tt.errorType)
			}

			// The next GET waits: there is no second event.
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"next", nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				t.Errorf("second GET /next answered %d, want it held", resp.StatusCode)
			}
		})
	}
}

// One start of a real binary: hello answers its event with the event;
// a start that goes wrong is an error that says how, with the process's
// output.
func TestStartOnce(t *testing.T) {
	hello, fake := hostBinaries(t)
	tests := []struct {
		name        string
		bin         string
		mode        string
		timeout     time.Duration
		wantFailed  bool
		wantPayload string
		wantErr     []string
	}{
		{name: "hello answers its event", bin: hello, wantPayload: `{"hello":"world"}`},
		{name: "a handler error is an answer", bin: fake, wantFailed: true, wantPayload: "refused"},
		{name: "exit during init", bin: fake, mode: "exit", wantErr: []string{"exited during init", "exit status 3", "TABLE is required"}},
		{name: "init error", bin: fake, mode: "initerror", wantErr: []string{"init error", "no table"}},
		{name: "never ready", bin: fake, mode: "hang", timeout: 300 * time.Millisecond, wantErr: []string{"not ready after 300ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			env, region := lambdaEnv(Function{Name: "fn", Env: map[string]string{"FAKE_MODE": tt.mode}})
			s, err := startOnce(context.Background(), tt.bin, "fn", region, env, []byte(`{"hello":"world"}`), timeout)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("start succeeded (%+v), want an error", s)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.answer.failed != tt.wantFailed || !strings.Contains(string(s.answer.payload), tt.wantPayload) {
				t.Errorf("answer failed=%v %s, want failed=%v with %s", s.answer.failed, s.answer.payload, tt.wantFailed, tt.wantPayload)
			}
			if s.ready <= 0 || s.firstInvoke <= 0 {
				t.Errorf("ready %v, first invoke %v, want both positive", s.ready, s.firstInvoke)
			}
		})
	}
}

// Measure builds for both architectures, starts each function Starts
// times, and reports sizes, medians and failed invokes; a function that
// cannot start makes it fail.
func TestMeasure(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name       string
		mode       string
		wantErrors int
		wantErr    string
	}{
		{name: "a function whose invokes fail", wantErrors: 3},
		{name: "a function that exits during init", mode: "exit", wantErr: "fake exited during init"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var after []int
			fake := Function{
				Name: "fake", Package: fakePackage,
				Env: map[string]string{"FAKE_MODE": tt.mode},
				Event: func(_ context.Context, n int) ([]byte, error) {
					return []byte(`{"n":` + strconv.Itoa(n) + `}`), nil
				},
				After: func(_ context.Context, n int, payload []byte, failed bool) error {
					mu.Lock()
					defer mu.Unlock()
					if failed && strings.Contains(string(payload), "refused") {
						after = append(after, n)
					}
					return nil
				},
			}
			hello, fns, err := Measure(context.Background(), Options{Functions: []Function{fake}, Starts: 3, Dir: dir})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(fns) != 1 {
				t.Fatalf("%d results, want 1", len(fns))
			}
			for _, r := range []Result{hello, fns[0]} {
				if r.SizeArm64 <= 0 || r.Ready <= 0 || r.FirstInvoke <= 0 || r.Samples != 3 {
					t.Errorf("%+v: want a size, positive medians and 3 samples", r)
				}
			}
			if hello.Name != HelloName || hello.Errors != 0 || fns[0].Name != "fake" || fns[0].Errors != tt.wantErrors {
				t.Errorf("hello %+v, fake %+v: want hello without errors, fake with %d", hello, fns[0], tt.wantErrors)
			}
			if len(after) != 3 {
				t.Errorf("After saw the failed answers of starts %v, want 3", after)
			}
			// The arm64 binary is the one measured for size.
			fi, err := os.Stat(filepath.Join(dir, "linux_arm64", "hello"))
			if err != nil || fi.Size() != hello.SizeArm64 {
				t.Errorf("linux_arm64/hello: %v, size %d; want the reported %d", err, fi.Size(), hello.SizeArm64)
			}
		})
	}
}

func TestMeasureRefusesFunctionsItCannotTellApart(t *testing.T) {
	tests := []struct {
		name string
		fns  []Function
		want string
	}{
		{"same name", []Function{{Name: "a", Package: "./x/a"}, {Name: "a", Package: "./y/b"}}, `two functions named "a"`},
		{"same binary", []Function{{Name: "a", Package: "./x/f"}, {Name: "b", Package: "./y/f"}}, "both build to a binary named f"},
		{"another hello", []Function{{Name: "h", Package: "./other/hello"}}, "both build to a binary named hello"},
		{"no package", []Function{{Name: "a"}}, "Package are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Measure(context.Background(), Options{Functions: tt.fns, Starts: 1})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	hello := Result{Name: "hello", SizeArm64: 5 << 20, Ready: 2 * time.Millisecond}
	tests := []struct {
		name string
		fns  []Result
		want []string // substrings of the error; none for no error
	}{
		{"within", []Result{{Name: "a", SizeArm64: MaxSizeArm64, Ready: 3 * time.Millisecond}}, nil},
		{"too big", []Result{{Name: "a", SizeArm64: MaxSizeArm64 + 1, Ready: time.Millisecond}}, []string{"a: arm64 bootstrap is 12582913 bytes"}},
		{"too slow", []Result{{Name: "b", SizeArm64: 1, Ready: 3*time.Millisecond + 1}}, []string{"b: ready in 3.000001ms", "over 1.5×"}},
		{"both", []Result{{Name: "a", SizeArm64: 13 << 20, Ready: time.Millisecond}, {Name: "b", Ready: time.Second}}, []string{"a: arm64", "b: ready"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(hello, tt.fns)
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("Check = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check = nil, want %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check = %v, want it to say %q", err, w)
				}
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []time.Duration
		want time.Duration
	}{
		{"none", nil, 0},
		{"odd", []time.Duration{5, 1, 3}, 3},
		{"even", []time.Duration{4, 1, 3, 2}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := median(tt.in); got != tt.want {
				t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
