package main

import (
	"maps"
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
