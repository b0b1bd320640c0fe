package main

import (
	"errors"
	"flag"
	"maps"
	"strings"
	"testing"
)

func TestParamFlag(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    map[string]string
		wantErr bool
	}{
		{"one", []string{"RetentionHours=48"}, map[string]string{"RetentionHours": "48"}, false},
		{"repeated, last wins", []string{"A=1", "B=x=y", "A=2"}, map[string]string{"A": "2", "B": "x=y"}, false},
		{"empty value", []string{"A="}, map[string]string{"A": ""}, false},
		{"no equals sign", []string{"A"}, nil, true},
		{"no key", []string{"=1"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := paramFlag{}
			var err error
			for _, a := range tc.args {
				if err = p.Set(a); err != nil {
					break
				}
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !maps.Equal(p, tc.want) {
				t.Errorf("params %v, want %v", p, tc.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// want* are checked when wantErr is "".
		wantErr                   string
		wantAPI, wantSFN          string
		wantDDBPort               int
		wantParam, wantParamValue string
	}{
		{
			name:    "defaults: free ports, Step Functions on loopback",
			wantAPI: "127.0.0.1:3000", wantSFN: "127.0.0.1:0", wantDDBPort: 0,
			wantParam: "StuckAfterSeconds", wantParamValue: "20",
		},
		{
			name:    "ports pinned for sam local",
			args:    []string{"-ddb-port", "8000", "-sfn-port", "8083", "-sfn-addr", "0.0.0.0"},
			wantAPI: "127.0.0.1:3000", wantSFN: "0.0.0.0:8083", wantDDBPort: 8000,
		},
		{
			name:    "IPv6 address",
			args:    []string{"-sfn-addr", "::", "-sfn-port", "8083", "-port", "3100"},
			wantAPI: "127.0.0.1:3100", wantSFN: "[::]:8083",
		},
		{
			name:    "a parameter overrides a local default",
			args:    []string{"-param", "StuckAfterSeconds=60"},
			wantAPI: "127.0.0.1:3000", wantSFN: "127.0.0.1:0",
			wantParam: "StuckAfterSeconds", wantParamValue: "60",
		},
		{name: "port out of range", args: []string{"-ddb-port", "65536"}, wantErr: "-ddb-port 65536"},
		{name: "negative port", args: []string{"-sfn-port", "-1"}, wantErr: "-sfn-port -1"},
		{name: "not a number", args: []string{"-sfn-port", "eighty"}, wantErr: "invalid value"},
		{name: "host name instead of an address", args: []string{"-sfn-addr", "localhost"}, wantErr: "-sfn-addr \"localhost\""},
		{name: "address with a port", args: []string{"-sfn-addr", "0.0.0.0:8083"}, wantErr: "-sfn-addr"},
		{name: "one port for both", args: []string{"-ddb-port", "8000", "-sfn-port", "8000"}, wantErr: "both 8000"},
		{name: "stray argument", args: []string{"8000"}, wantErr: "unexpected arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			c, err := parseFlags(tc.args, &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v (output %s)", err, out.String())
			}
			opts := c.stackOptions(nil)
			if opts.APIAddr != tc.wantAPI {
				t.Errorf("APIAddr %q, want %q", opts.APIAddr, tc.wantAPI)
			}
			if opts.SFNAddr != tc.wantSFN {
				t.Errorf("SFNAddr %q, want %q", opts.SFNAddr, tc.wantSFN)
			}
			if opts.DynamoDBPort != tc.wantDDBPort {
				t.Errorf("DynamoDBPort %d, want %d", opts.DynamoDBPort, tc.wantDDBPort)
			}
			if opts.DynamoDBEndpoint != "" {
				t.Errorf("DynamoDBEndpoint %q: the command always starts its own DynamoDB Local", opts.DynamoDBEndpoint)
			}
			if tc.wantParam != "" && opts.Parameters[tc.wantParam] != tc.wantParamValue {
				t.Errorf("parameter %s = %q, want %q", tc.wantParam, opts.Parameters[tc.wantParam], tc.wantParamValue)
			}
		})
	}
}

func TestParseFlagsHelpListsThePortFlags(t *testing.T) {
	var out strings.Builder
	if _, err := parseFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	for _, f := range []string{"-ddb-port", "-sfn-port", "-sfn-addr"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("help lacks %s:\n%s", f, out.String())
		}
	}
	if !strings.Contains(out.String(), "without authentication") && !strings.Contains(out.String(), "no authentication") {
		t.Errorf("help does not warn that -sfn-addr exposes an unauthenticated endpoint:\n%s", out.String())
	}
}
