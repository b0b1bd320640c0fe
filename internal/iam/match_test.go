package iam

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		name, pattern, s string
		want             bool
	}{
		{"empty matches empty", "", "", true},
		{"empty matches nothing else", "", "a", false},
		{"literal", "abc", "abc", true},
		{"literal is exact", "abc", "abcd", false},
		{"* matches empty", "a*", "a", true},
		{"* matches a run", "a*c", "abbbc", true},
		{"* backtracks", "a*b*c", "aXbYbZc", true},
		{"* alone", "*", "anything:at/all", true},
		{"? matches one", "a?c", "abc", true},
		{"? needs one", "a?c", "ac", false},
		{"? is one rune, not one byte", "a?c", "aéc", true},
		{"many stars", "**a**", "xax", true},
		{"trailing literal after star", "*.json", "a.json.bak", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, f := compile(tt.pattern, true, false)
			if f != nil {
				t.Fatal(f)
			}
			if got := p.match(tt.s); got != tt.want {
				t.Errorf("%q.match(%q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
			}
		})
	}
}

func TestResourcePatternColons(t *testing.T) {
	const arn = "arn:aws:states:us-east-1:123456789012:stateMachine:Transfer"
	tests := []struct {
		name, pattern string
		want          bool
	}{
		{"exact", arn, true},
		{"* ending the region spans into the account", "arn:aws:states:*:stateMachine:Transfer", true},
		{"* ending the partition spans several segments", "arn:*:us-east-1:123456789012:stateMachine:Transfer", true},
		{"* inside the region does not span", "arn:aws:states:u*1:stateMachine:Transfer", false},
		{"? in the region never matches a colon", "arn:aws:states:us-east-1?123456789012:stateMachine:Transfer", false},
		{"* in the resource part spans colons", "arn:aws:states:us-east-1:123456789012:state*Transfer", true},
		{"? in the resource part matches a colon", "arn:aws:states:us-east-1:123456789012:stateMachine?Transfer", true},
		{"fewer segments ending in *", "arn:aws:states:us-*", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, f := resourcePattern(tt.pattern, true)
			if f != nil {
				if tt.want {
					t.Fatal(f)
				}
				return
			}
			if got := matchResource(p, arn); got != tt.want {
				t.Errorf("%q matches %q = %v, want %v", tt.pattern, arn, got, tt.want)
			}
		})
	}
}

// globRegexp is the regular expression a wildcard pattern stands for, each
// wildcard matching a ':' only where p says it may.
func globRegexp(p pattern) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	for _, t := range p {
		switch {
		case t.kind == literal:
			b.WriteString(regexp.QuoteMeta(string(t.r)))
		case t.kind == anyRun && t.colon:
			b.WriteString(`.*`)
		case t.kind == anyRun:
			b.WriteString(`[^:]*`)
		case t.colon:
			b.WriteString(`.`)
		default:
			b.WriteString(`[^:]`)
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile("(?s)" + b.String())
}

// FuzzPatternMatch: matching agrees with the regular expression the pattern
// stands for, as a plain wildcard pattern and as a resource ARN pattern.
func FuzzPatternMatch(f *testing.F) {
	for _, seed := range [][2]string{
		{"a*b?c", "axxbyc"},
		{"arn:aws:states:*:stateMachine:T", "arn:aws:states:us-east-1:1:stateMachine:T"},
		{"arn:aws:s3:::b/*/x/*", "arn:aws:s3:::b/1/2/x/3"},
		{"a?:*:b*", "ab:c:d:bee"},
		{"**:?*", "::x"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pat, s string) {
		if !utf8.ValidString(pat) || !utf8.ValidString(s) || len(pat) > 64 || len(s) > 64 {
			return
		}
		p, fault := compile(pat, true, false)
		if fault != nil {
			t.Fatalf("compile(%q): %v", pat, fault)
		}
		if got, want := p.match(s), globRegexp(p).MatchString(s); got != want {
			t.Fatalf("%q.match(%q) = %v, regexp says %v", pat, s, got, want)
		}
		restrictColons(p)
		if got, want := p.match(s), globRegexp(p).MatchString(s); got != want {
			t.Fatalf("resource %q.match(%q) = %v, regexp says %v", pat, s, got, want)
		}
	})
}
