package doccheck

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A Step is one command of a page's console session (a ```console block)
// and the output the page shows for it.
type Step struct {
	// Line is where the command starts in the page (1-based).
	Line int
	// Command is the command as typed, continuation lines included.
	Command string
	// Output is the output the page shows, without trailing blank lines.
	Output []string
}

// Steps returns the commands of a Markdown page's ```console blocks, in
// order: a line starting with "$ " begins a command, a line ending in a
// backslash continues it, and the lines up to the next command or the
// end of the block are its output.
func Steps(page string) []Step {
	var (
		steps   []Step
		cur     *Step
		inBlock bool
		cont    bool
	)
	flush := func() {
		if cur == nil {
			return
		}
		for len(cur.Output) > 0 && strings.TrimSpace(cur.Output[len(cur.Output)-1]) == "" {
			cur.Output = cur.Output[:len(cur.Output)-1]
		}
		steps = append(steps, *cur)
		cur = nil
	}
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !inBlock:
			inBlock = strings.TrimSpace(line) == "```console"
		case strings.HasPrefix(line, "```"):
			flush()
			inBlock, cont = false, false
		case cont:
			cur.Command += "\n" + line
			cont = strings.HasSuffix(line, `\`)
		case strings.HasPrefix(line, "$ "):
			flush()
			cur = &Step{Line: n, Command: strings.TrimPrefix(line, "$ ")}
			cont = strings.HasSuffix(line, `\`)
		case cur != nil:
			cur.Output = append(cur.Output, line)
		}
	}
	flush()
	return steps
}

// Curl is a curl command of a page: the request it sends and whether it
// shows the status line and headers (-i).
type Curl struct {
	Method  string
	URL     string
	Header  http.Header
	Body    string
	Include bool
}

// ParseCurl reads a curl command line with the flags the pages use: -i,
// -s, -X METHOD, -H 'Name: value' and -d DATA, quoted as a POSIX shell
// quotes. Anything else (another program, a pipe, a variable, a command
// substitution, another flag) is an error: a page's session must be
// runnable as written.
func ParseCurl(command string) (Curl, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(command), "")
	if err != nil {
		return Curl{}, fmt.Errorf("parse %q: %w", command, err)
	}
	if len(f.Stmts) != 1 {
		return Curl{}, fmt.Errorf("%q: want one command", command)
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(f.Stmts[0].Redirs) > 0 {
		return Curl{}, fmt.Errorf("%q: want a plain command, without pipes, assignments or redirections", command)
	}
	var args []string
	for _, w := range call.Args {
		s, err := literal(w)
		if err != nil {
			return Curl{}, fmt.Errorf("%q: %w", command, err)
		}
		args = append(args, s)
	}
	if len(args) == 0 || args[0] != "curl" {
		return Curl{}, fmt.Errorf("%q: only curl commands can be run", command)
	}
	c := Curl{Header: http.Header{}}
	for i := 1; i < len(args); i++ {
		a := args[i]
		value := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("%q: %s needs a value", command, a)
			}
			i++
			return args[i], nil
		}
		switch a {
		case "-i", "--include":
			c.Include = true
		case "-s", "--silent":
		case "-X", "--request":
			if c.Method, err = value(); err != nil {
				return Curl{}, err
			}
		case "-H", "--header":
			h, err := value()
			if err != nil {
				return Curl{}, err
			}
			name, v, ok := strings.Cut(h, ":")
			if !ok {
				return Curl{}, fmt.Errorf("%q: header %q has no colon", command, h)
			}
			c.Header.Add(strings.TrimSpace(name), strings.TrimSpace(v))
		case "-d", "--data", "--data-raw":
			if c.Body, err = value(); err != nil {
				return Curl{}, err
			}
		default:
			if strings.HasPrefix(a, "-") || c.URL != "" {
				return Curl{}, fmt.Errorf("%q: %q is not an option this check runs", command, a)
			}
			c.URL = a
		}
	}
	if c.URL == "" {
		return Curl{}, fmt.Errorf("%q: no URL", command)
	}
	if c.Method == "" {
		c.Method = http.MethodGet
		if c.Body != "" {
			c.Method = http.MethodPost
		}
	}
	return c, nil
}

// literal is a shell word without expansions.
func literal(w *syntax.Word) (string, error) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return "", errors.New("an expansion inside double quotes")
				}
				b.WriteString(lit.Value)
			}
		default:
			return "", fmt.Errorf("a %T, which this check does not run", p)
		}
	}
	return b.String(), nil
}

// Request is the command's request to the API at base (scheme and host)
// in place of the host the page names.
func (c Curl) Request(base string) (*http.Request, error) {
	raw := c.URL
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("URL %q: %w", c.URL, err)
	}
	b, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("base %q: %w", base, err)
	}
	u.Scheme, u.Host = b.Scheme, b.Host
	var body io.Reader
	if c.Body != "" {
		body = strings.NewReader(c.Body)
	}
	req, err := http.NewRequest(c.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.Header = c.Header.Clone()
	if c.Body != "" && req.Header.Get("Content-Type") == "" {
		// curl's default for -d.
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req, nil
}

// Shown is what curl prints for resp and its body: with -i the status
// line, the headers (sorted) and a blank line, then the body.
func (c Curl) Shown(resp *http.Response, body []byte) []string {
	var out []string
	if c.Include {
		out = append(out, fmt.Sprintf("HTTP/1.1 %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range resp.Header {
				if !yield(k) {
					return
				}
			}
		}) {
			for _, v := range resp.Header[name] {
				out = append(out, name+": "+v)
			}
		}
		out = append(out, "")
	}
	return append(out, strings.Split(strings.TrimRight(string(body), "\n"), "\n")...)
}

// IDs maps the identifiers a page shows (transfer ids) to those the
// service answered in their place, in the order they appeared.
type IDs map[string]string

// Rewrite replaces the page's identifiers in a command with the service's.
func (ids IDs) Rewrite(command string) string {
	for shown, real := range ids {
		command = strings.ReplaceAll(command, shown, real)
	}
	return command
}

// tokens are what a shown output may differ in from an answer: transfer
// ids (UUIDs), timestamps, and "..." where the page leaves text out.
var tokens = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z|\.\.\.`)

const (
	uuidPattern = `([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`
	timePattern = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z`
)

// matcher is a regular expression for one shown line (or body), with the
// page's ids that its groups capture, in order.
type matcher struct {
	re  *regexp.Regexp
	ids []string
}

func (ids IDs) matcher(shown string) matcher {
	var (
		b    strings.Builder
		m    matcher
		last int
	)
	b.WriteString(`(?s)^`)
	for _, loc := range tokens.FindAllStringIndex(shown, -1) {
		b.WriteString(regexp.QuoteMeta(shown[last:loc[0]]))
		tok := shown[loc[0]:loc[1]]
		switch {
		case tok == "...":
			b.WriteString(`.*?`)
		case strings.Contains(tok, "T") && strings.HasSuffix(tok, "Z"):
			b.WriteString(timePattern)
		case ids[tok] != "":
			b.WriteString(regexp.QuoteMeta(ids[tok]))
		default:
			b.WriteString(uuidPattern)
			m.ids = append(m.ids, tok)
		}
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(shown[last:]))
	b.WriteString(`$`)
	m.re = regexp.MustCompile(b.String())
	return m
}

// match reports whether got matches shown, and learns the ids it pairs.
func (ids IDs) match(shown, got string) bool {
	m := ids.matcher(shown)
	sub := m.re.FindStringSubmatch(got)
	if sub == nil {
		return false
	}
	learned := IDs{}
	for i, id := range m.ids {
		real := sub[i+1]
		if prev, ok := learned[id]; ok && prev != real {
			return false
		}
		learned[id] = real
	}
	for id, real := range learned {
		ids[id] = real
	}
	return true
}

// Compare checks a command's output against what the page shows: the
// status line as shown; each header shown among the answer's; the body
// as shown. Ids are matched to the answer's (learning new ones), times
// match any time, and "..." any text. It returns what differs, or "".
func (ids IDs) Compare(c Curl, shown, got []string) string {
	if !c.Include {
		if want, have := strings.Join(shown, "\n"), strings.Join(got, "\n"); !ids.match(want, have) {
			return fmt.Sprintf("the page shows\n%s\nthe service answered\n%s", want, have)
		}
		return ""
	}
	split := func(lines []string) (status string, headers, body []string) {
		if len(lines) == 0 {
			return "", nil, nil
		}
		i := slices.Index(lines, "")
		if i < 0 {
			i = len(lines)
		}
		headers = lines[1:i]
		if i < len(lines) {
			body = lines[i+1:]
		}
		return lines[0], headers, body
	}
	wantStatus, wantHeaders, wantBody := split(shown)
	gotStatus, gotHeaders, gotBody := split(got)
	var diffs []string
	if wantStatus != gotStatus {
		diffs = append(diffs, fmt.Sprintf("status %q, the page shows %q", gotStatus, wantStatus))
	}
	for _, h := range wantHeaders {
		if !slices.ContainsFunc(gotHeaders, func(g string) bool { return ids.match(h, g) }) {
			diffs = append(diffs, fmt.Sprintf("no header %q among\n%s", h, strings.Join(gotHeaders, "\n")))
		}
	}
	if want, have := strings.Join(wantBody, "\n"), strings.Join(gotBody, "\n"); !ids.match(want, have) {
		diffs = append(diffs, fmt.Sprintf("the page shows the body\n%s\nthe service answered\n%s", want, have))
	}
	return strings.Join(diffs, "\n")
}
