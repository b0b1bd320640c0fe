package cfn_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/spec"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// projectTemplate loads the project's template.yaml.
func projectTemplate(t *testing.T) *cfn.Template {
	t.Helper()
	root, err := ddblocal.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := cfn.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	return tmpl
}

func keySchema(ks []types.KeySchemaElement) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = aws.ToString(k.AttributeName) + ":" + string(k.KeyType)
	}
	return strings.Join(parts, ",")
}

type index struct {
	Keys       string
	Projection types.ProjectionType
	NonKey     []string
}

func TestProjectTablesInDynamoDBLocal(t *testing.T) {
	tmpl := projectTemplate(t)
	tables, err := tmpl.Tables(cfn.Env{})
	if err != nil {
		t.Fatalf("Tables: %v", err)
	}
	byID := map[string]cfn.Table{}
	for _, tb := range tables {
		byID[tb.LogicalID] = tb
	}
	// What the stack is known to declare; the details are compared with
	// the template below.
	idem, ok := byID["IdempotencyTable"]
	if !ok || len(idem.Input.GlobalSecondaryIndexes) == 0 || idem.TimeToLive == nil || !aws.ToBool(idem.TimeToLive.Enabled) {
		t.Fatalf("IdempotencyTable with GSIs and TTL not found in template.yaml: %+v", idem)
	}
	if ledger, ok := byID["LedgerTable"]; !ok || len(ledger.Input.LocalSecondaryIndexes) == 0 {
		t.Fatalf("LedgerTable with an LSI not found in template.yaml")
	}

	client := ddbtest.Client(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := "-cfn-" + hex.EncodeToString(b[:])
	name := func(tb cfn.Table) string { return aws.ToString(tb.Input.TableName) + suffix }
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, tb := range tables {
			_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name(tb))})
			var nf *types.ResourceNotFoundException
			if err != nil && !errors.As(err, &nf) {
				t.Errorf("delete %s: %v", name(tb), err)
			}
		}
	})
	if err := cfn.CreateTables(t.Context(), client, tables, name); err != nil {
		t.Fatalf("CreateTables: %v", err)
	}
	if got := aws.ToString(tables[0].Input.TableName); strings.HasSuffix(got, suffix) {
		t.Errorf("CreateTables modified the input: %s", got)
	}

	for _, tb := range tables {
		t.Run(tb.LogicalID, func(t *testing.T) {
			out, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name(tb))})
			if err != nil {
				t.Fatalf("DescribeTable: %v", err)
			}
			d := out.Table
			if d.TableStatus != types.TableStatusActive {
				t.Errorf("status %s", d.TableStatus)
			}
			if got, want := keySchema(d.KeySchema), keySchema(tb.Input.KeySchema); got != want {
				t.Errorf("key schema %s, want %s", got, want)
			}
			wantGSI, gotGSI := map[string]index{}, map[string]index{}
			for _, g := range tb.Input.GlobalSecondaryIndexes {
				wantGSI[aws.ToString(g.IndexName)] = index{keySchema(g.KeySchema), g.Projection.ProjectionType, g.Projection.NonKeyAttributes}
			}
			for _, g := range d.GlobalSecondaryIndexes {
				gotGSI[aws.ToString(g.IndexName)] = index{keySchema(g.KeySchema), g.Projection.ProjectionType, g.Projection.NonKeyAttributes}
				if g.IndexStatus != types.IndexStatusActive {
					t.Errorf("GSI %s status %s", aws.ToString(g.IndexName), g.IndexStatus)
				}
			}
			if !reflect.DeepEqual(gotGSI, wantGSI) {
				t.Errorf("GSIs %+v, want %+v", gotGSI, wantGSI)
			}
			wantLSI, gotLSI := map[string]index{}, map[string]index{}
			for _, l := range tb.Input.LocalSecondaryIndexes {
				wantLSI[aws.ToString(l.IndexName)] = index{keySchema(l.KeySchema), l.Projection.ProjectionType, l.Projection.NonKeyAttributes}
			}
			for _, l := range d.LocalSecondaryIndexes {
				gotLSI[aws.ToString(l.IndexName)] = index{keySchema(l.KeySchema), l.Projection.ProjectionType, l.Projection.NonKeyAttributes}
			}
			if !reflect.DeepEqual(gotLSI, wantLSI) {
				t.Errorf("LSIs %+v, want %+v", gotLSI, wantLSI)
			}
			if tb.Input.BillingMode == types.BillingModePayPerRequest {
				if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
					t.Errorf("billing mode %+v, want PAY_PER_REQUEST", d.BillingModeSummary)
				}
			}

			ttl, err := client.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name(tb))})
			if err != nil {
				t.Fatalf("DescribeTimeToLive: %v", err)
			}
			wantStatus := types.TimeToLiveStatusDisabled
			if tb.TimeToLive != nil && aws.ToBool(tb.TimeToLive.Enabled) {
				wantStatus = types.TimeToLiveStatusEnabled
				if got := aws.ToString(ttl.TimeToLiveDescription.AttributeName); got != aws.ToString(tb.TimeToLive.AttributeName) {
					t.Errorf("TTL attribute %s, want %s", got, aws.ToString(tb.TimeToLive.AttributeName))
				}
			}
			if ttl.TimeToLiveDescription.TimeToLiveStatus != wantStatus {
				t.Errorf("TTL status %s, want %s", ttl.TimeToLiveDescription.TimeToLiveStatus, wantStatus)
			}
		})
	}

	t.Run("creating an existing table fails", func(t *testing.T) {
		err := cfn.CreateTables(t.Context(), client, tables[:1], name)
		var inUse *types.ResourceInUseException
		if !errors.As(err, &inUse) {
			t.Errorf("err = %v, want ResourceInUseException", err)
		}
	})
}

func TestProjectTemplateViews(t *testing.T) {
	tmpl := projectTemplate(t)
	env := cfn.Env{}

	fns, err := tmpl.Functions(env)
	if err != nil {
		t.Fatalf("Functions: %v", err)
	}
	sms, err := tmpl.StateMachines(env)
	if err != nil {
		t.Fatalf("StateMachines: %v", err)
	}
	rules, err := tmpl.Rules(env)
	if err != nil {
		t.Fatalf("Rules: %v", err)
	}
	routes, err := tmpl.APIRoutes(env)
	if err != nil {
		t.Fatalf("APIRoutes: %v", err)
	}
	tables, err := tmpl.Tables(env)
	if err != nil {
		t.Fatalf("Tables: %v", err)
	}
	tableNames := map[string]bool{}
	for _, tb := range tables {
		tableNames[aws.ToString(tb.Input.TableName)] = true
	}

	t.Run("functions get Globals", func(t *testing.T) {
		if len(fns) == 0 {
			t.Fatal("no functions")
		}
		g := tmpl.Globals.Get("Function")
		runtime, _ := g.Get("Runtime").Str()
		for _, f := range fns {
			if runtime != "" && f.Runtime != runtime {
				t.Errorf("%s runtime %q, want the global %q", f.LogicalID, f.Runtime, runtime)
			}
			if f.Handler == "" || f.CodeUri == "" {
				t.Errorf("%s has no Handler or CodeUri: %+v", f.LogicalID, f)
			}
			vars := g.Get("Environment").Get("Variables")
			if vars == nil {
				continue
			}
			for _, k := range vars.Keys {
				if _, ok := f.Environment[k]; !ok {
					t.Errorf("%s lacks the global environment variable %s", f.LogicalID, k)
				}
			}
			for k, v := range f.Environment {
				if strings.HasSuffix(k, "_TABLE") && !tableNames[v] {
					t.Errorf("%s: %s=%s is not a table of the template", f.LogicalID, k, v)
				}
			}
		}
	})
	t.Run("state machine definitions are substituted", func(t *testing.T) {
		if len(sms) == 0 {
			t.Fatal("no state machines")
		}
		for _, sm := range sms {
			if strings.Contains(string(sm.Definition), "${") {
				t.Errorf("%s definition keeps a placeholder", sm.LogicalID)
			}
			var def map[string]any
			if err := json.Unmarshal(sm.Definition, &def); err != nil {
				t.Errorf("%s definition is not JSON: %v", sm.LogicalID, err)
			}
			if sm.Type != "STANDARD" {
				t.Errorf("%s type %s, want STANDARD", sm.LogicalID, sm.Type)
			}
		}
	})
	t.Run("rules target functions of the template", func(t *testing.T) {
		ids := map[string]bool{}
		for _, f := range fns {
			ids[f.LogicalID] = true
		}
		var sources []string
		for _, r := range rules {
			sources = append(sources, r.Source)
			if !ids[r.TargetFunction] {
				t.Errorf("rule %s targets %s", r.LogicalID, r.TargetFunction)
			}
			if (r.Pattern == nil) == (r.ScheduleExpression == "") {
				t.Errorf("rule %s needs exactly one of a pattern and a schedule", r.LogicalID)
			}
		}
		for _, want := range []string{cfn.SourceEventBridgeRule, cfn.SourceSchedule} {
			if !slices.Contains(sources, want) {
				t.Errorf("no %s rule in %v", want, sources)
			}
		}
	})
	t.Run("API routes require IAM auth", func(t *testing.T) {
		if len(routes) == 0 {
			t.Fatal("no routes")
		}
		for _, r := range routes {
			if r.Authorizer != "AWS_IAM" {
				t.Errorf("%s %s authorizer %s, want AWS_IAM", r.Method, r.Path, r.Authorizer)
			}
			if r.Method != strings.ToUpper(r.Method) {
				t.Errorf("method %s is not upper-case", r.Method)
			}
		}
	})
	t.Run("API routes are the operations of api/openapi.yaml", func(t *testing.T) {
		doc, err := spec.Source()
		if err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for _, r := range doc.Routes() {
			want = append(want, r.Method+" "+r.Path+" OrchestratorFunction TransfersApi")
		}
		for _, r := range routes {
			got = append(got, r.Method+" "+r.Path+" "+r.FunctionLogicalID+" "+r.RestApiID)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("routes %q, want %q", got, want)
		}
	})
	t.Run("the API's definition is api/openapi.yaml, resolved", func(t *testing.T) {
		def, err := tmpl.APIDefinition(env, "TransfersApi")
		if err != nil {
			t.Fatal(err)
		}
		doc, err := spec.Load(def)
		if err != nil {
			t.Fatalf("resolved definition: %v", err)
		}
		if _, ok := doc.Extension("x-amazon-apigateway-policy"); ok {
			t.Error("a resource policy without AllowedPrincipals")
		}
		responses, _ := doc.Extension("x-amazon-apigateway-gateway-responses")
		for _, typ := range []string{"DEFAULT_4XX", "DEFAULT_5XX", "THROTTLED", "MISSING_AUTHENTICATION_TOKEN", "ACCESS_DENIED", "BAD_REQUEST_BODY"} {
			r, _ := responses.(map[string]any)[typ].(map[string]any)
			params, _ := r["responseParameters"].(map[string]any)
			if ct := params["gatewayresponse.header.Content-Type"]; ct != "'application/problem+json'" {
				t.Errorf("gateway response %s: Content-Type %v, want 'application/problem+json'", typ, ct)
			}
			tpl, _ := r["responseTemplates"].(map[string]any)["application/json"].(string)
			if !strings.Contains(tpl, `"code":"`) {
				t.Errorf("gateway response %s: template %q has no code", typ, tpl)
			}
		}
		for _, r := range doc.Routes() {
			integ, _ := r.Operation.Extensions["x-amazon-apigateway-integration"].(map[string]any)
			const uri = "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/arn:aws:lambda:us-east-1:123456789012:function:OrchestratorFunction:live/invocations" // the live alias (AutoPublishAlias)
			if integ["uri"] != uri || integ["type"] != "aws_proxy" {
				t.Errorf("%s %s integration %v, want aws_proxy %s", r.Method, r.Path, integ, uri)
			}
		}
	})
	t.Run("AllowedPrincipals adds a resource policy", func(t *testing.T) {
		withPolicy := env
		withPolicy.Parameters = map[string]string{}
		for k, v := range env.Parameters {
			withPolicy.Parameters[k] = v
		}
		const role = "arn:aws:iam::123456789012:role/payments"
		withPolicy.Parameters["AllowedPrincipals"] = role + ",arn:aws:iam::123456789012:user/ops"
		def, err := tmpl.APIDefinition(withPolicy, "TransfersApi")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Policy struct {
				Statement []struct {
					Effect    string
					Principal any
					Condition map[string]map[string][]string
				}
			} `json:"x-amazon-apigateway-policy"`
		}
		if err := json.Unmarshal(def, &doc); err != nil {
			t.Fatal(err)
		}
		st := doc.Policy.Statement
		if len(st) != 2 || st[0].Effect != "Allow" || st[1].Effect != "Deny" {
			t.Fatalf("policy statements %+v, want an Allow and a Deny", st)
		}
		if got := st[1].Condition["ArnNotLike"]["aws:PrincipalArn"]; len(got) != 2 || got[0] != role {
			t.Errorf("Deny applies to principals other than %v", got)
		}
	})
}

// The functions' reserved concurrency, as the local runtime enforces it:
// the template's parameters by default, none where a parameter of 0
// leaves a function unreserved (AWS::NoValue).
func TestProjectReservedConcurrency(t *testing.T) {
	tmpl := projectTemplate(t)
	for _, tc := range []struct {
		name   string
		params map[string]string
		want   map[string]int // logical ID -> reserved; absent: unreserved
	}{
		{"defaults", nil, map[string]int{"OrchestratorFunction": 100, "DebitFunction": 50, "CreditFunction": 50, "RefundFunction": 50, "ReaperFunction": 5}},
		{"orchestrator unreserved", map[string]string{"OrchestratorReservedConcurrency": "0", "WorkerReservedConcurrency": "7"},
			map[string]int{"DebitFunction": 7, "CreditFunction": 7, "RefundFunction": 7, "ReaperFunction": 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fns, err := tmpl.Functions(cfn.Env{Region: "us-east-1", AccountID: "123456789012", Parameters: tc.params})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fns {
				want, reserved := tc.want[f.LogicalID]
				switch {
				case reserved && (f.ReservedConcurrency == nil || *f.ReservedConcurrency != want):
					t.Errorf("%s: reserved %v, want %d", f.LogicalID, f.ReservedConcurrency, want)
				case !reserved && f.ReservedConcurrency != nil:
					t.Errorf("%s: reserved %d, want none", f.LogicalID, *f.ReservedConcurrency)
				}
			}
		})
	}
}
