package doccheck

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/seed"
)

// seedCommand is a cmd/seed invocation in code, up to the end of its
// line (continuation lines joined first).
var seedCommand = regexp.MustCompile(`(?:go run \./cmd/seed|bin/seed|\bseed)\b([^\n` + "`" + `]*)`)

// seedFlags are cmd/seed's flags, read from its source: name -> whether
// it takes a value.
func seedFlags(t *testing.T) map[string]bool {
	t.Helper()
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`fs\.(String|Bool)\("([a-z-]+)"`).FindAllStringSubmatch(read(t, "cmd/seed/main.go"), -1) {
		flags[m[2]] = m[1] == "String"
	}
	if !flags["owner"] || flags["demo"] {
		t.Fatalf("read no -owner or -demo flag from cmd/seed/main.go: %v", flags)
	}
	return flags
}

// shellWords splits a command line as the shell would for these
// examples: on blanks outside quotes and $(...), quotes removed; a # that
// starts a word ends the line.
func shellWords(line string) []string {
	var words []string
	var b strings.Builder
	var quote rune
	depth, inWord := 0, false
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
				continue
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
			continue
		case r == '(' && strings.HasSuffix(b.String(), "$"):
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == ' ' || r == '\t'):
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
			continue
		case r == '#' && !inWord && depth == 0:
			return words
		}
		b.WriteRune(r)
		inWord = true
	}
	if inWord {
		words = append(words, b.String())
	}
	return words
}

// checkSeedArgs reports why cmd/seed would refuse args, or would open
// accounts in a deployed stack for the local stack's default caller.
func checkSeedArgs(flags map[string]bool, args []string) []string {
	if slices.Contains(args, "-h") || slices.Contains(args, "-help") {
		return nil // the usage
	}
	var problems []string
	values := map[string]string{}
	demo := false
	var specs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			specs = append(specs, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, ok := flags[name]
		switch {
		case !ok:
			problems = append(problems, "cmd/seed has no flag -"+name)
		case !takesValue:
			demo = true
		case hasValue:
			values[name] = value
		case i+1 < len(args):
			i++
			values[name] = args[i]
		default:
			problems = append(problems, "-"+name+" without a value")
		}
	}
	if !demo && len(specs) == 0 {
		problems = append(problems, "no accounts (cmd/seed wants ID:CURRENCY:BALANCE arguments or -demo)")
	}
	for _, spec := range specs {
		if _, err := seed.Parse(spec, values["owner"]); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if demo && values["stack"] != "" && values["owner"] == "" {
		problems = append(problems, "-demo in a deployed stack (-stack) without -owner opens the demo accounts for the local stack's caller "+seed.LocalOwner)
	}
	return problems
}

// TestSeedExamples: every cmd/seed command the docs give is one cmd/seed
// accepts: known flags, and every account with an owner (-owner, or an
// ID:CURRENCY:BALANCE:OWNER argument).
func TestSeedExamples(t *testing.T) {
	flags := seedFlags(t)
	checked := 0
	for _, p := range pages(t) {
		for _, code := range codeSpans.FindAllString(read(t, p), -1) {
			code = strings.ReplaceAll(code, "\\\n", " ")
			for _, m := range seedCommand.FindAllStringSubmatch(code, -1) {
				if !strings.Contains(m[0], "cmd/seed") {
					continue
				}
				checked++
				if problems := checkSeedArgs(flags, shellWords(m[1])); len(problems) > 0 {
					t.Errorf("%s: `%s`: %s", p, strings.TrimSpace(m[0]), strings.Join(problems, "; "))
				}
			}
		}
	}
	if checked < 5 {
		t.Errorf("checked only %d cmd/seed commands: is the pattern still right?", checked)
	}
}

func TestCheckSeedArgs(t *testing.T) {
	flags := map[string]bool{"owner": true, "stack": true, "demo": false, "ledger-table": true}
	for _, tc := range []struct {
		name string
		line string
		ok   bool
	}{
		{"owner for all", "-stack s -owner iam:arn:aws:iam::1:user/a a:EUR:1 b:EUR:2", true},
		{"owner per account", "-stack s a:EUR:1:iam:arn:aws:iam::1:user/a", true},
		{"no owner", "-stack s a:EUR:1 b:EUR:2", false},
		{"demo, local", "-demo", true},
		{"demo, deployed, no owner", "-stack s -demo", false},
		{"demo, deployed, owner", `-stack s -demo -owner "iam:$(aws sts get-caller-identity --query Arn --output text)"   # a comment`, true},
		{"unknown flag", "-owners x a:EUR:1", false},
		{"nothing", "-stack s", false},
		{"usage", "-h", true},
		{"bad currency", "-owner o a:EURO:1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := checkSeedArgs(flags, shellWords(tc.line))
			if (len(problems) == 0) != tc.ok {
				t.Errorf("%q: problems %q, want ok=%t", tc.line, problems, tc.ok)
			}
		})
	}
	if got, want := shellWords(`-owner "iam:$(aws sts x --output text)" a:EUR:1 # c`), []string{"-owner", "iam:$(aws sts x --output text)", "a:EUR:1"}; !slices.Equal(got, want) {
		t.Errorf("shellWords = %q, want %q", got, want)
	}
}
