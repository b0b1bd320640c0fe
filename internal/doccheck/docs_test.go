package doccheck

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/exactlyonce/transfers/internal/cfn"
)

// root is the repository root, from this package's directory.
const root = "../.."

// pages are the Markdown files the docs checks read: README.md, the
// project files, docs/ and the other folders' pages, paths relative to
// root.
func pages(t *testing.T) []string {
	t.Helper()
	var out []string
	skip := map[string]bool{".git": true, ".tools": true, ".aws-sam": true, ".local": true, "bin": true, "node_modules": true}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && skip[d.Name()] {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("found only %d Markdown pages: %q", len(out), out)
	}
	return out
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParameterTable: docs/deploy.md's parameter table is template.yaml's
// (regenerate it with make docs-parameters).
func TestParameterTable(t *testing.T) {
	want, err := ParameterTable(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	page := read(t, "docs/deploy.md")
	spliced, err := Splice(page, want)
	if err != nil {
		t.Fatalf("docs/deploy.md: %v", err)
	}
	if spliced != page {
		t.Errorf("docs/deploy.md's parameter table is not template.yaml's: run make docs-parameters")
	}
}

// codeSpans are the inline code spans and fenced code blocks of a page:
// where the docs give commands.
var codeSpans = regexp.MustCompile("(?s)```.*?```|`[^`\n]+`")

// makeCommand is a make command in code: make, then a target.
var makeCommand = regexp.MustCompile("(?m)(?:^|[\\s;&|($`])make\\s+((?:[A-Z_]+=\\S+\\s+)*)([a-z][a-zA-Z0-9-]*)")

// makeTargets are the Makefile's explicit targets.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	targets := map[string]bool{}
	rule := regexp.MustCompile(`^([a-zA-Z][\w-]*(?:\s+[a-zA-Z$][\w$()/.-]*)*)\s*:([^=]|$)`)
	sc := bufio.NewScanner(strings.NewReader(read(t, "Makefile")))
	for sc.Scan() {
		if m := rule.FindStringSubmatch(sc.Text()); m != nil {
			for _, name := range strings.Fields(m[1]) {
				targets[name] = true
			}
		}
	}
	if !targets["local"] || !targets["test"] {
		t.Fatalf("read no local or test target from the Makefile: %v", targets)
	}
	return targets
}

// TestMakeTargetsExist: every `make TARGET` the docs give is a target of
// the Makefile.
func TestMakeTargetsExist(t *testing.T) {
	targets := makeTargets(t)
	checked := 0
	for _, p := range pages(t) {
		for _, code := range codeSpans.FindAllString(read(t, p), -1) {
			for _, m := range makeCommand.FindAllStringSubmatch(code, -1) {
				checked++
				if !targets[m[2]] {
					t.Errorf("%s names `make %s`, which is no target of the Makefile", p, m[2])
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d make commands: is the pattern still right?", checked)
	}
}

// TestLocalPort: the local API's port in the docs is the Makefile's PORT
// default, which is cmd/local's -port default.
func TestLocalPort(t *testing.T) {
	m := regexp.MustCompile(`(?m)^PORT \?= (\d+)$`).FindStringSubmatch(read(t, "Makefile"))
	if m == nil {
		t.Fatal("the Makefile has no PORT ?= N")
	}
	port := m[1]
	if !strings.Contains(read(t, "cmd/local/main.go"), `fs.IntVar(&c.port, "port", `+port+",") {
		t.Errorf("cmd/local's -port default is not the Makefile's PORT %s", port)
	}
	// An API call: a URL or host:port followed by an API route.
	api := regexp.MustCompile(`(?:127\.0\.0\.1|localhost):(\d+)(?:/v1)?/(?:transfers|accounts)\b`)
	checked := 0
	for _, p := range pages(t) {
		for _, m := range api.FindAllStringSubmatch(read(t, p), -1) {
			checked++
			if m[1] != port && !strings.Contains(read(t, p), "-port "+m[1]) && !strings.Contains(read(t, p), "PORT="+m[1]) {
				t.Errorf("%s calls the local API on port %s; make local serves %s (and the page starts none on %s)", p, m[1], port, m[1])
			}
		}
	}
	if checked == 0 {
		t.Error("no page calls the local API: is the pattern still right?")
	}
}

// TestStageName: a deployed API URL in the docs has the template's stage.
func TestStageName(t *testing.T) {
	tpl, err := cfn.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	stage := tpl.Parameters["StageName"].Default
	if stage == "" {
		t.Fatal("template.yaml's StageName has no default")
	}
	url := regexp.MustCompile(`execute-api\.[A-Za-z0-9.{}$_-]+\.amazonaws\.com/([A-Za-z0-9_]+)`)
	checked := 0
	for _, p := range pages(t) {
		for _, m := range url.FindAllStringSubmatch(read(t, p), -1) {
			checked++
			if m[1] != stage {
				t.Errorf("%s has an API URL with stage %q; the template's StageName is %q", p, m[1], stage)
			}
		}
	}
	if checked == 0 {
		t.Error("no page has a deployed API URL: is the pattern still right?")
	}
}

// link is a Markdown link or image: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// heading is a Markdown heading line.
var heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)

// anchors are the GitHub anchors of a page's headings.
func anchors(page string) map[string]bool {
	out := map[string]bool{}
	page = regexp.MustCompile("(?s)```.*?```").ReplaceAllString(page, "")
	for _, m := range heading.FindAllStringSubmatch(page, -1) {
		out[slug(m[1])] = true
	}
	return out
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped
// (except - and _), spaces as -.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestLinks: every relative link of every page reaches a file, and its
// #anchor a heading of that page.
func TestLinks(t *testing.T) {
	for _, p := range pages(t) {
		text := codeSpans.ReplaceAllString(read(t, p), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := p
			if file != "" {
				dest = filepath.ToSlash(filepath.Join(filepath.Dir(p), file))
				if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
					t.Errorf("%s links to %s, which does not exist", p, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !anchors(read(t, dest))[anchor] {
				t.Errorf("%s links to %s: %s has no heading #%s", p, target, dest, anchor)
			}
		}
	}
}

// TestREADMEIndexesEveryPage: the README is short and links every page
// under docs/.
func TestREADMEIndexesEveryPage(t *testing.T) {
	readme := read(t, "README.md")
	if n := strings.Count(readme, "\n"); n > 200 {
		t.Errorf("README.md has %d lines; keep it to about 200 and move detail to docs/", n)
	}
	var linked []string
	for _, m := range link.FindAllStringSubmatch(readme, -1) {
		linked = append(linked, strings.SplitN(m[1], "#", 2)[0])
	}
	for _, p := range pages(t) {
		if strings.HasPrefix(p, "docs/") && !slices.Contains(linked, p) {
			t.Errorf("README.md does not link %s", p)
		}
	}
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Sample events", "sample-events"},
		{"Who may move whose money", "who-may-move-whose-money"},
		{"`make load`: what it prints", "make-load-what-it-prints"},
		{"ApiServerErrorRateAlarm", "apiservererrorratealarm"},
		{"Costs per 1,000 transfers", "costs-per-1000-transfers"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// TestRunbookCoversEveryAlarm: every alarm of the template has a heading
// in the runbook that names it.
func TestRunbookCoversEveryAlarm(t *testing.T) {
	tpl, err := cfn.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	alarms := tpl.ResourcesOfType("AWS::CloudWatch::Alarm")
	if len(alarms) == 0 {
		t.Fatal("template.yaml has no alarms: is the type right?")
	}
	const runbook = "docs/operations/runbook.md"
	var headings []string
	for _, m := range heading.FindAllStringSubmatch(read(t, runbook), -1) {
		headings = append(headings, m[1])
	}
	for _, a := range alarms {
		found := false
		for _, h := range headings {
			for _, name := range strings.Split(h, ",") {
				found = found || strings.TrimSpace(name) == a.LogicalID
			}
		}
		if !found {
			t.Errorf("%s has no heading for the alarm %s (what fired, what to check, what to do)", runbook, a.LogicalID)
		}
	}
}

// goCommand is a go command in code, up to the end of its line.
var goCommand = regexp.MustCompile("(?m)(?:^|[\\s;&|($`])go (?:test|run|build|vet|tool)\\b[^\n`]*")

// packagePath is a relative package path of a go command.
var packagePath = regexp.MustCompile(`(?:^|\s)(\./[\w./-]*)`)

// placeholder is a path segment in capitals, such as ./PACKAGE/.
var placeholder = regexp.MustCompile(`(^|/)[A-Z_]+(/|$)`)

// TestGoPackagesExist: every ./path a go command in the docs names is a
// directory of the repository.
func TestGoPackagesExist(t *testing.T) {
	checked := 0
	for _, p := range pages(t) {
		for _, code := range codeSpans.FindAllString(read(t, p), -1) {
			for _, cmd := range goCommand.FindAllString(code, -1) {
				for _, m := range packagePath.FindAllStringSubmatch(cmd, -1) {
					dir := strings.TrimSuffix(strings.TrimSuffix(m[1], "..."), "/")
					if placeholder.MatchString(dir) {
						continue // ./PACKAGE/: a placeholder, not a path
					}
					checked++
					if st, err := os.Stat(filepath.Join(root, dir)); err != nil || !st.IsDir() {
						t.Errorf("%s runs %q on %s, which is no directory of the repository", p, strings.TrimSpace(cmd), m[1])
					}
				}
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked only %d package paths: is the pattern still right?", checked)
	}
}

// TestBareMakeInstallsNothing: a bare `make` prints the targets; it
// installs no scanner, SAM CLI or npm package unasked.
func TestBareMakeInstallsNothing(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	out, err := exec.Command("make", "-n", "-C", root).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n: %v\n%s", err, out)
	}
	// Nor does it lint, test or build: whether or not the tools are there.
	for _, installer := range []string{"pip", "npm", "venv", "go mod download", "checkov", "cfn-lint", "go test", "go build"} {
		if strings.Contains(string(out), installer) {
			t.Errorf("a bare make would run %s:\n%s", installer, out)
		}
	}
	help, err := exec.Command("make", "-s", "-C", root, "help").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"local", "test", "build", "deploy", "integration", "load", "sam-validate", "docs-parameters", "docs-licences"} {
		if !regexp.MustCompile(`(?m)^  ` + target + `\s`).Match(help) {
			t.Errorf("make help does not list %s:\n%s", target, help)
		}
	}
}

// TestBenchPlots: the plots docs/development/commands.md says make bench
// writes are those internal/bench's Plots writes, by name and number.
func TestBenchPlots(t *testing.T) {
	var names []string
	for _, m := range regexp.MustCompile(`date ?\+ ?"(-[a-z-]+\.png)"`).FindAllStringSubmatch(read(t, "internal/bench/plots.go"), -1) {
		names = append(names, "<date>"+m[1])
	}
	if len(names) < 2 {
		t.Fatalf("read %d plot names from internal/bench/plots.go: is the pattern still right?", len(names))
	}
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	if len(names) >= len(words) {
		t.Fatalf("%d plots: extend the number words", len(names))
	}
	for _, p := range []string{"docs/development/commands.md", "docs/development/performance.md"} {
		page := read(t, p)
		for _, w := range words {
			if n := regexp.MustCompile(`\b` + w + ` (plots|PNGs)\b`); n.MatchString(page) && w != words[len(names)] {
				t.Errorf("%s says %q; make bench writes %d: %q", p, n.FindString(page), len(names), names)
			}
		}
		if !strings.Contains(page, words[len(names)]+" plots") && !strings.Contains(page, words[len(names)]+" PNGs") {
			t.Errorf("%s does not say make bench writes %s plots", p, words[len(names)])
		}
	}
	commands := read(t, "docs/development/commands.md")
	for _, n := range names {
		if !strings.Contains(commands, "`"+n+"`") {
			t.Errorf("docs/development/commands.md does not name the plot %s", n)
		}
	}
}

// TestBootstrapCount: where the docs count the arm64 bootstraps, the
// number is that of the Makefile's FUNCTIONS list.
func TestBootstrapCount(t *testing.T) {
	mk := strings.ReplaceAll(read(t, "Makefile"), "\\\n", " ")
	m := regexp.MustCompile(`(?m)^FUNCTIONS :=(.*)$`).FindStringSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile has no FUNCTIONS := list")
	}
	n := len(strings.Fields(m[1]))
	words := map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
	count := regexp.MustCompile(`\b(one|two|three|four|five|six|seven|eight|nine|ten)\s+(?:arm64\s+)?bootstraps\b`)
	checked := 0
	for _, p := range []string{"README.md", "docs/deploy.md", "docs/development/testing.md"} {
		for _, c := range count.FindAllStringSubmatch(read(t, p), -1) {
			checked++
			if words[c[1]] != n {
				t.Errorf("%s says %q; the Makefile's FUNCTIONS lists %d", p, c[0], n)
			}
		}
	}
	if checked < 3 {
		t.Errorf("found only %d counts of bootstraps: is the pattern still right?", checked)
	}
}

// TestToolVersions: the Node.js and Python versions the docs ask for are
// the ones the project enforces: tools/package.json's engines (npm ci is
// engine-strict through tools/.npmrc) and the Makefile's PYTHON_MIN and
// PYTHON_MAX.
func TestToolVersions(t *testing.T) {
	engines := regexp.MustCompile(`"node":\s*">=(\d+)"`)
	m := engines.FindStringSubmatch(read(t, "tools/package.json"))
	if m == nil {
		t.Fatal(`tools/package.json has no "engines": {"node": ">=N"}`)
	}
	node := m[1]
	if lock := engines.FindStringSubmatch(read(t, "tools/package-lock.json")); lock == nil || lock[1] != node {
		t.Errorf("tools/package-lock.json's root engines %v are not tools/package.json's >=%s", lock, node)
	}
	if !regexp.MustCompile(`(?m)^engine-strict=true$`).MatchString(read(t, "tools/.npmrc")) {
		t.Error("tools/.npmrc does not make npm ci refuse an older Node.js (engine-strict=true)")
	}
	mk := read(t, "Makefile")
	pyMin := regexp.MustCompile(`(?m)^PYTHON_MIN := (3\.\d+)$`).FindStringSubmatch(mk)
	pyMax := regexp.MustCompile(`(?m)^PYTHON_MAX := (3\.\d+)$`).FindStringSubmatch(mk)
	if pyMin == nil || pyMax == nil {
		t.Fatal("the Makefile has no PYTHON_MIN := 3.N or PYTHON_MAX := 3.N")
	}
	nodeDoc := regexp.MustCompile(`Node\.js(?: with npm)?\s*\|?\s*(\d+)(\+| or later)`)
	pyDoc := regexp.MustCompile(`Python\s*\|?\s*(3\.\d+)(\+| or later| to (3\.\d+))`)
	found := map[string]int{}
	for _, p := range []string{"README.md", "CONTRIBUTING.md", "docs/getting-started.md", "docs/deploy.md", "Makefile"} {
		text := strings.Join(strings.Fields(strings.ReplaceAll(read(t, p), "\n#", "\n")), " ")
		for _, d := range nodeDoc.FindAllStringSubmatch(text, -1) {
			found["node"]++
			if d[1] != node {
				t.Errorf("%s asks for %q; tools/package.json's engines say >=%s", p, d[0], node)
			}
		}
		for _, d := range pyDoc.FindAllStringSubmatch(text, -1) {
			found["python"]++
			if d[1] != pyMin[1] || (d[3] != "" && d[3] != pyMax[1]) {
				t.Errorf("%s asks for %q; the Makefile checks for %s to %s", p, d[0], pyMin[1], pyMax[1])
			}
		}
	}
	if found["node"] < 3 || found["python"] < 3 {
		t.Errorf("found only %v version statements: are the patterns still right?", found)
	}
}

// TestCIWorkflow: the GitHub Actions workflow runs .ci/run within CI's
// 90 minutes, with the versions the project asks for: Go from go.mod,
// Java 17, tools/package.json's Node.js and the Makefile's PYTHON_MIN.
func TestCIWorkflow(t *testing.T) {
	var wf struct {
		Jobs map[string]struct {
			RunsOn         string `yaml:"runs-on"`
			TimeoutMinutes int    `yaml:"timeout-minutes"`
			Steps          []struct {
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal([]byte(read(t, ".github/workflows/ci.yml")), &wf); err != nil {
		t.Fatal(err)
	}
	if len(wf.Jobs) != 1 {
		t.Fatalf("ci.yml has %d jobs, want 1", len(wf.Jobs))
	}
	node := regexp.MustCompile(`"node":\s*">=(\d+)"`).FindStringSubmatch(read(t, "tools/package.json"))
	python := regexp.MustCompile(`(?m)^PYTHON_MIN := (3\.\d+)$`).FindStringSubmatch(read(t, "Makefile"))
	if node == nil || python == nil {
		t.Fatal("no Node.js engines in tools/package.json or PYTHON_MIN in the Makefile")
	}
	want := map[string][2]string{
		"actions/setup-go":     {"go-version-file", "go.mod"},
		"actions/setup-java":   {"java-version", "17"},
		"actions/setup-node":   {"node-version", node[1]},
		"actions/setup-python": {"python-version", python[1]},
	}
	for name, job := range wf.Jobs {
		if job.RunsOn != "ubuntu-latest" || job.TimeoutMinutes != 90 {
			t.Errorf("job %s runs on %q for %d minutes, want ubuntu-latest, 90", name, job.RunsOn, job.TimeoutMinutes)
		}
		seen := map[string]bool{}
		last := ""
		for _, s := range job.Steps {
			action, _, _ := strings.Cut(s.Uses, "@")
			if w, ok := want[action]; ok {
				seen[action] = true
				if s.With[w[0]] != w[1] {
					t.Errorf("job %s: %s with %s: %q, want %q", name, action, w[0], s.With[w[0]], w[1])
				}
			}
			if s.Run != "" {
				last = strings.TrimSpace(s.Run)
			}
		}
		for action := range want {
			if !seen[action] {
				t.Errorf("job %s does not set up %s", name, action)
			}
		}
		if last != "bash .ci/run" {
			t.Errorf("job %s's last command is %q, want bash .ci/run", name, last)
		}
	}
}

// TestSecurityNamesTheRepository: SECURITY.md sends reports to the
// repository of go.mod's module path.
func TestSecurityNamesTheRepository(t *testing.T) {
	m := regexp.MustCompile(`(?m)^module (github\.com/\S+)$`).FindStringSubmatch(read(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod's module is not on github.com")
	}
	for _, want := range []string{"https://" + m[1], "https://" + m[1] + "/security/advisories/new"} {
		if !strings.Contains(read(t, "SECURITY.md"), "("+want+")") {
			t.Errorf("SECURITY.md does not link %s", want)
		}
	}
}

// TestStackNamesExist: the stack outputs, table indexes and logical
// resource IDs that the docs' AWS CLI commands name are the template's
// (resources: template.yaml's, or template.cfn.json's after the SAM
// transform).
func TestStackNamesExist(t *testing.T) {
	tpl := read(t, "template.yaml")
	section := func(name string) map[string]bool {
		out := map[string]bool{}
		i := strings.Index(tpl, "\n"+name+":\n")
		if i < 0 {
			t.Fatalf("template.yaml has no %s section", name)
		}
		rest := tpl[i+len(name)+3:]
		if j := regexp.MustCompile(`(?m)^[A-Za-z]`).FindStringIndex(rest); j != nil {
			rest = rest[:j[0]]
		}
		for _, m := range regexp.MustCompile(`(?m)^  ([A-Za-z0-9]+):`).FindAllStringSubmatch(rest, -1) {
			out[m[1]] = true
		}
		return out
	}
	outputs, resources := section("Outputs"), section("Resources")
	// And those the SAM transform adds (the CodeDeploy application, ...).
	var transformed struct{ Resources map[string]json.RawMessage }
	if err := json.Unmarshal([]byte(read(t, "template.cfn.json")), &transformed); err != nil {
		t.Fatal(err)
	}
	for id := range transformed.Resources {
		resources[id] = true
	}
	indexes := map[string]bool{}
	for _, m := range regexp.MustCompile(`IndexName: (\w+)`).FindAllStringSubmatch(tpl, -1) {
		indexes[m[1]] = true
	}
	checks := []struct {
		what    string
		pattern *regexp.Regexp
		names   map[string]bool
	}{
		{"stack output", regexp.MustCompile(`OutputKey=='(\w+)'`), outputs},
		{"table index", regexp.MustCompile(`--index-name (\w+)`), indexes},
		{"resource", regexp.MustCompile(`--logical-resource-id (\w+)`), resources},
	}
	checked := map[string]int{}
	for _, p := range pages(t) {
		for _, code := range codeSpans.FindAllString(read(t, p), -1) {
			for _, c := range checks {
				for _, m := range c.pattern.FindAllStringSubmatch(code, -1) {
					checked[c.what]++
					if !c.names[m[1]] {
						t.Errorf("%s names the %s %s, which template.yaml does not have", p, c.what, m[1])
					}
				}
			}
		}
	}
	for _, c := range checks {
		if checked[c.what] == 0 {
			t.Errorf("no page names a %s: is the pattern still right?", c.what)
		}
	}
}
