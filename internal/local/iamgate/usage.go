package iamgate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/exactlyonce/transfers/internal/iam"
)

// Grant is one action on one resource pattern that a statement of a
// role's policy allows.
type Grant struct {
	Role      string `json:"role"`
	Policy    string `json:"policy"`
	Statement int    `json:"statement"`
	Action    string `json:"action"`
	Resource  string `json:"resource"`
}

func (g Grant) String() string {
	return fmt.Sprintf("%s: %s statement %d: %s on %s", g.Role, g.Policy, g.Statement, g.Action, g.Resource)
}

func grantKey(m iam.Match) string {
	return fmt.Sprintf("%s\x00%d\x00%s\x00%s", m.Policy, m.Statement, m.Action, m.Resource)
}

// Usage is what the stack's roles are granted, and which grants the calls
// so far used.
type Usage struct {
	Granted []Grant `json:"granted"`
	Used    []Grant `json:"used"`
}

// Usage returns the grants of the roles' own policies (inline, and the
// template's AWS::IAM::Policy resources) and of the functions' resource
// policies, and the ones a call has used. AWS managed policies are left
// out: the stack cannot narrow them.
func (g *Gate) Usage() Usage {
	g.mu.Lock()
	defer g.mu.Unlock()
	var u Usage
	add := func(role string, pols []*iam.Policy) {
		for _, p := range pols {
			if strings.HasPrefix(p.Name, "aws-managed/") {
				continue
			}
			for _, m := range iam.Grants(p) {
				gr := Grant{Role: role, Policy: m.Policy, Statement: m.Statement, Action: m.Action, Resource: m.Resource}
				u.Granted = append(u.Granted, gr)
				if g.used[grantKey(m)] > 0 {
					u.Used = append(u.Used, gr)
				}
			}
		}
	}
	seen := map[*Role]bool{}
	for _, r := range g.p.byKey {
		if !seen[r] {
			seen[r] = true
			add(r.LogicalID, r.Policies)
		}
	}
	for fn, pols := range g.p.resourcePolicies {
		add(fn, pols)
	}
	sortGrants(u.Granted)
	sortGrants(u.Used)
	return u
}

func sortGrants(gs []Grant) {
	slices.SortFunc(gs, func(a, b Grant) int { return strings.Compare(a.String(), b.String()) })
}

// NotEmulated reports an action of a service the local stack does not
// run, which no local call can use: CloudWatch Logs' log delivery and
// X-Ray, which AWS services call for themselves.
func NotEmulated(action string) bool {
	service, _, _ := strings.Cut(action, ":")
	return service == "logs" || service == "xray"
}

// UsageDirEnv names a directory where each stack writes its Usage when it
// stops, so that a report can add up the grants a whole test run used
// (cmd/iamreport).
const UsageDirEnv = "IAM_USAGE_DIR"

// WriteUsage writes the Usage to a new file in dir.
func (g *Gate) WriteUsage(dir string) error {
	data, err := json.Marshal(g.Usage())
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "usage-*.json")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Unused reads the Usage files of dir and returns the grants that some
// stack had and none used.
func Unused(dir string) (unused []Grant, files int, err error) {
	paths, err := filepath.Glob(filepath.Join(dir, "usage-*.json"))
	if err != nil {
		return nil, 0, err
	}
	granted, used := map[Grant]bool{}, map[Grant]bool{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, 0, err
		}
		var u Usage
		if err := json.Unmarshal(data, &u); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", p, err)
		}
		for _, g := range u.Granted {
			granted[g] = true
		}
		for _, g := range u.Used {
			used[g] = true
		}
	}
	for g := range granted {
		if !used[g] {
			unused = append(unused, g)
		}
	}
	sortGrants(unused)
	return unused, len(paths), nil
}
