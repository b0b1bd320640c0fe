package doccheck

import (
	"net/http"
	"strings"
	"testing"
)

func TestSteps(t *testing.T) {
	page := "text\n```console\n$ curl -i 127.0.0.1:3000/a \\\n    -H 'X: y'\nHTTP/1.1 200 OK\n\n{}\n\n$ curl 127.0.0.1:3000/b\n{\"b\":1}\n```\n```sh\n$ make local\n```\n"
	steps := Steps(page)
	if len(steps) != 2 {
		t.Fatalf("%d steps, want 2: %+v", len(steps), steps)
	}
	if steps[0].Line != 3 || steps[0].Command != "curl -i 127.0.0.1:3000/a \\\n    -H 'X: y'" ||
		strings.Join(steps[0].Output, "|") != "HTTP/1.1 200 OK||{}" {
		t.Errorf("first step %+v", steps[0])
	}
	if steps[1].Command != "curl 127.0.0.1:3000/b" || strings.Join(steps[1].Output, "|") != `{"b":1}` {
		t.Errorf("second step %+v", steps[1])
	}
}

func TestParseCurl(t *testing.T) {
	tests := []struct {
		name    string
		command string
		want    Curl
		wantErr bool
	}{
		{name: "GET", command: "curl 127.0.0.1:3000/transfers/x",
			want: Curl{Method: "GET", URL: "127.0.0.1:3000/transfers/x", Header: http.Header{}}},
		{name: "POST with quoted body over two lines",
			command: "curl -i -X POST 127.0.0.1:3000/transfers -H 'Content-Type: application/json' \\\n    -d '{\"a\":\"b c\"}'",
			want: Curl{Method: "POST", URL: "127.0.0.1:3000/transfers", Include: true,
				Header: http.Header{"Content-Type": {"application/json"}}, Body: `{"a":"b c"}`}},
		{name: "double-quoted URL", command: `curl "127.0.0.1:3000/transfers?limit=1"`,
			want: Curl{Method: "GET", URL: "127.0.0.1:3000/transfers?limit=1", Header: http.Header{}}},
		{name: "a variable", command: `curl "127.0.0.1:3000/transfers?cursor=$CURSOR"`, wantErr: true},
		{name: "a pipe", command: `curl 127.0.0.1:3000/transfers | jq .`, wantErr: true},
		{name: "another program", command: `make local`, wantErr: true},
		{name: "an option not run", command: `curl -L 127.0.0.1:3000/transfers`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCurl(tt.command)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && (got.Method != tt.want.Method || got.URL != tt.want.URL || got.Body != tt.want.Body ||
				got.Include != tt.want.Include || len(got.Header) != len(tt.want.Header) ||
				got.Header.Get("Content-Type") != tt.want.Header.Get("Content-Type")) {
				t.Errorf("ParseCurl = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Compare matches ids to the service's, times to any time and "..." to
// any text, and refuses an output that differs in anything else.
func TestCompare(t *testing.T) {
	const (
		shownID = "01a20261-1381-78f3-9771-eff03200f256"
		realID  = "01a21c00-0000-7000-8000-000000000001"
		otherID = "01a21c00-0000-7000-8000-000000000002"
	)
	include := Curl{Include: true}
	tests := []struct {
		name   string
		curl   Curl
		ids    IDs
		shown  []string
		got    []string
		wantOK bool
		wantID string
	}{
		{name: "a new id and a time", curl: include,
			shown:  []string{"HTTP/1.1 202 Accepted", "Location: /transfers/" + shownID, "", `{"transferId":"` + shownID + `","createdAt":"2026-11-22T08:30:46.145Z"}`},
			got:    []string{"HTTP/1.1 202 Accepted", "Content-Type: application/json", "Location: /transfers/" + realID, "", `{"transferId":"` + realID + `","createdAt":"2026-11-27T09:00:00.1Z"}`},
			wantOK: true, wantID: realID},
		{name: "a known id must be the same", ids: IDs{shownID: realID},
			shown: []string{`{"transferId":"` + shownID + `"}`}, got: []string{`{"transferId":"` + otherID + `"}`}},
		{name: "one id shown twice answered as two", curl: include,
			shown: []string{"HTTP/1.1 202 Accepted", "Location: /transfers/" + shownID, "", `{"transferId":"` + shownID + `"}`},
			got:   []string{"HTTP/1.1 202 Accepted", "Location: /transfers/" + realID, "", `{"transferId":"` + otherID + `"}`}},
		{name: "elided text", shown: []string{`{"status":"COMPLETED",...}`}, got: []string{`{"status":"COMPLETED","amount":5}`}, wantOK: true},
		{name: "another status", curl: include, shown: []string{"HTTP/1.1 200 OK", "", "{}"}, got: []string{"HTTP/1.1 202 Accepted", "", "{}"}},
		{name: "a header missing", curl: include, shown: []string{"HTTP/1.1 200 OK", "Idempotent-Replayed: true", "", "{}"}, got: []string{"HTTP/1.1 200 OK", "", "{}"}},
		{name: "another amount", shown: []string{`{"amount":2500}`}, got: []string{`{"amount":250}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := tt.ids
			if ids == nil {
				ids = IDs{}
			}
			diff := ids.Compare(tt.curl, tt.shown, tt.got)
			if (diff == "") != tt.wantOK {
				t.Fatalf("Compare = %q, want match %v", diff, tt.wantOK)
			}
			if tt.wantID != "" && ids[shownID] != tt.wantID {
				t.Errorf("learned %v, want %s -> %s", ids, shownID, tt.wantID)
			}
		})
	}
}
