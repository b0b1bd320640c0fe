package cfn

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func load(t *testing.T, path string) *Template {
	t.Helper()
	tmpl, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return tmpl
}

func TestFunctionsMergeGlobals(t *testing.T) {
	tmpl := load(t, "testdata/globals.yaml")
	fns, err := tmpl.Functions(Env{StackName: "stack"})
	if err != nil {
		t.Fatalf("Functions: %v", err)
	}
	byID := map[string]Function{}
	var order []string
	for _, f := range fns {
		byID[f.LogicalID] = f
		order = append(order, f.LogicalID)
	}
	if got := strings.Join(order, ","); got != "Defaults,Overrides" {
		t.Fatalf("functions = %s, want Defaults,Overrides (Disabled has a false condition)", got)
	}
	defaults, overrides := byID["Defaults"], byID["Overrides"]

	tests := []struct {
		name      string
		got, want any
	}{
		{"name defaults to the logical ID", defaults.Name, "Defaults"},
		{"FunctionName", overrides.Name, "stack-overrides"},
		{"CodeUri", overrides.CodeUri, "functions/overrides/"},
		{"global Handler", overrides.Handler, "bootstrap"},
		{"global Runtime", defaults.Runtime, "provided.al2023"},
		{"function Runtime wins", overrides.Runtime, "go1.x"},
		{"global Timeout", defaults.Timeout, 10 * time.Second},
		{"function Timeout wins", overrides.Timeout, 30 * time.Second},
		{"SAM default MemorySize", defaults.MemorySize, 128},
		{"MemorySize", overrides.MemorySize, 512},
		{"global Architectures", defaults.Architectures, []string{"arm64"}},
		{"global environment", defaults.Environment, map[string]string{
			"SHARED": "from-globals", "OVERRIDDEN": "from-globals", "LEVEL": "INFO",
		}},
		{"environment merged key-wise", overrides.Environment, map[string]string{
			"SHARED": "from-globals", "OVERRIDDEN": "from-function", "LEVEL": "INFO", "OWN": "things", "COUNT": "7",
		}},
		{"event types", len(overrides.Events), 8},
		{"event properties resolved", overrides.Events["Queue"], Event{Type: "SQS", Properties: map[string]any{
			"Queue": "arn:aws:sqs:us-east-1:123456789012:Dlq", "BatchSize": int64(5),
		}}},
		{"no events", len(defaults.Events), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %#v, want %#v", tt.got, tt.want)
			}
		})
	}

	t.Run("lists concatenate, globals first", func(t *testing.T) {
		got := dump(tmpl.Resources["Overrides"].Properties.Get("Layers"))
		if got != "[global-layer,own-layer]" {
			t.Errorf("Layers = %s", got)
		}
	})
	t.Run("defaults when no Globals", func(t *testing.T) {
		tm, err := Parse("g.yaml", []byte("Resources:\n  F:\n    Type: AWS::Serverless::Function\n"))
		if err != nil {
			t.Fatal(err)
		}
		fns, err := tm.Functions(Env{})
		if err != nil {
			t.Fatal(err)
		}
		f := fns[0]
		if f.Timeout != 3*time.Second || f.MemorySize != 128 || !reflect.DeepEqual(f.Architectures, []string{"x86_64"}) {
			t.Errorf("defaults = %v %d %v, want 3s 128 [x86_64]", f.Timeout, f.MemorySize, f.Architectures)
		}
	})
}

func TestRules(t *testing.T) {
	tmpl := load(t, "testdata/globals.yaml")
	rules, err := tmpl.Rules(Env{})
	if err != nil {
		t.Fatalf("Rules: %v", err)
	}
	const arn = "arn:aws:sqs:us-east-1:123456789012:"
	want := []Rule{
		{
			LogicalID: "OverridesChanged", Source: SourceEventBridgeRule, Name: "OverridesChanged", TargetFunction: "Overrides",
			Pattern: []byte(`{"detail":{"amount":[{"numeric":[">",0]}]},"source":["app"]}`), Enabled: true,
			RetryPolicy:   &RetryPolicy{MaximumRetryAttempts: 4, MaximumEventAgeInSeconds: DefaultMaximumEventAgeInSeconds},
			DeadLetterARN: arn + "OverridesChangedQueue",
		},
		{
			LogicalID: "OverridesCron", Source: SourceSchedule, Name: "cron-name", TargetFunction: "Overrides",
			ScheduleExpression: "rate(1 minute)", Enabled: false, Input: `{"kind":"cron"}`,
		},
		{
			LogicalID: "OverridesNightly", Source: SourceScheduleV2, Name: "OverridesNightly", TargetFunction: "Overrides",
			ScheduleExpression: "cron(0 3 * * ? *)", Enabled: false,
			RetryPolicy:   &RetryPolicy{MaximumRetryAttempts: DefaultMaximumRetryAttempts, MaximumEventAgeInSeconds: 60},
			DeadLetterARN: arn + "Dlq",
		},
		{
			LogicalID: "OverridesLegacy", Source: SourceCloudWatchEvent, Name: "legacy-rule", TargetFunction: "Overrides",
			Pattern: []byte(`{"source":["legacy"]}`), EventBusName: "bus", Enabled: true,
		},
		{
			LogicalID: "Manual", Source: SourceEventsRule, Name: "Manual", TargetFunction: "Defaults", TargetID: "lambda",
			ScheduleExpression: "rate(10 minutes)", Enabled: true, Input: `{"manual":true}`,
			RetryPolicy:   &RetryPolicy{MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 120},
			DeadLetterARN: arn + "Dlq",
		},
	}
	if len(rules) != len(want) {
		t.Fatalf("got %d rules, want %d: %+v", len(rules), len(want), rules)
	}
	for i := range want {
		t.Run(want[i].LogicalID, func(t *testing.T) {
			if !reflect.DeepEqual(rules[i], want[i]) {
				g, _ := json.Marshal(rules[i])
				w, _ := json.Marshal(want[i])
				t.Errorf("got  %s (pattern %s)\nwant %s (pattern %s)", g, rules[i].Pattern, w, want[i].Pattern)
			}
		})
	}
}

func TestRuleErrors(t *testing.T) {
	const head = "Resources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      Events:\n        E:\n"
	tests := []struct {
		name    string
		src     string
		wantErr error
		want    string
	}{
		{"pattern missing", head + "          Type: EventBridgeRule\n          Properties: {}\n", ErrInvalid, "Pattern is required"},
		{"pattern not JSON", head + "          Type: EventBridgeRule\n          Properties: {Pattern: '{x'}\n", ErrInvalid, "event pattern is not JSON"},
		{"schedule missing", head + "          Type: Schedule\n          Properties: {}\n", ErrInvalid, "Schedule is required"},
		{"unknown retry field", head + "          Type: Schedule\n          Properties: {Schedule: rate(1 minute), RetryPolicy: {MaxRetries: 1}}\n", ErrUnknownProperty, `"MaxRetries" of RetryPolicy`},
		{"dead-letter without Arn or Type", head + "          Type: Schedule\n          Properties: {Schedule: rate(1 minute), DeadLetterConfig: {}}\n", ErrInvalid, "DeadLetterConfig needs Arn"},
		{"rule targets a function not in the template", "Resources:\n  R:\n    Type: AWS::Events::Rule\n    Properties:\n      ScheduleExpression: rate(1 minute)\n      Targets:\n        - Id: x\n          Arn: arn:aws:lambda:us-east-1:1:function:elsewhere\n", ErrUnresolved, "is not a function of this template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse("rules.yaml", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tmpl.Rules(Env{})
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %v containing %q", err, tt.wantErr, tt.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "rules.yaml:") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestAPIRoutes(t *testing.T) {
	tmpl := load(t, "testdata/globals.yaml")
	routes, err := tmpl.APIRoutes(Env{})
	if err != nil {
		t.Fatalf("APIRoutes: %v", err)
	}
	want := []Route{
		{Path: "/things", Method: "POST", FunctionLogicalID: "Overrides", EventName: "Create", RestApiID: "ServerlessRestApi", Authorizer: AuthorizerNone},
		{Path: "/things/{id}", Method: "ANY", FunctionLogicalID: "Overrides", EventName: "Any", RestApiID: "SecureApi", Authorizer: "AWS_IAM"},
		{Path: "/health", Method: "GET", FunctionLogicalID: "Overrides", EventName: "Open", RestApiID: "SecureApi", Authorizer: AuthorizerNone},
	}
	if !reflect.DeepEqual(routes, want) {
		t.Errorf("routes:\n got %+v\nwant %+v", routes, want)
	}
	if r := tmpl.Resources["ServerlessRestApi"]; r == nil || !r.Implicit || r.Type != TypeServerlessAPI {
		t.Errorf("implicit ServerlessRestApi = %+v", r)
	}
}

func TestStateMachines(t *testing.T) {
	tmpl := load(t, "testdata/statemachines.yaml")
	sms, err := tmpl.StateMachines(Env{Region: "eu-central-1"})
	if err != nil {
		t.Fatalf("StateMachines: %v", err)
	}
	if len(sms) != 3 {
		t.Fatalf("got %d state machines, want 3", len(sms))
	}
	const fnArn = "arn:aws:lambda:eu-central-1:123456789012:function:Debit"
	fromFile, inline, plain := sms[0], sms[1], sms[2]
	tests := []struct {
		name      string
		got, want any
	}{
		{"name defaults to the logical ID", fromFile.Name, "FromFile"},
		{"ARN", fromFile.ARN, "arn:aws:states:eu-central-1:123456789012:stateMachine:FromFile"},
		{"Type from the resource wins over Globals", fromFile.Type, "STANDARD"},
		{"Type from Globals", inline.Type, "EXPRESS"},
		{"DefinitionUri as written", fromFile.DefinitionUri, "statemachine/flow.asl.json"},
		{"implicit role", fromFile.RoleArn, "arn:aws:iam::123456789012:role/FromFileRole"},
		{"Role", inline.RoleArn, "arn:aws:iam::123456789012:role/custom"},
		{"Name", inline.Name, "inline-machine"},
		{"StepFunctions name", plain.Name, "plain"},
		{"StepFunctions type default", plain.Type, "STANDARD"},
		{"StepFunctions RoleArn", plain.RoleArn, "arn:aws:iam::123456789012:role/PlainRole"},
		{"DefinitionString", string(plain.Definition), `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"eu-central-1","End":true}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %#v, want %#v", tt.got, tt.want)
			}
		})
	}

	t.Run("file substitutions", func(t *testing.T) {
		var def struct {
			States struct {
				Debit struct {
					Resource   string
					Parameters map[string]any
				}
			}
		}
		if err := json.Unmarshal(fromFile.Definition, &def); err != nil {
			t.Fatalf("definition is not JSON after substitution: %v\n%s", err, fromFile.Definition)
		}
		if def.States.Debit.Resource != fnArn {
			t.Errorf("Resource = %q, want %q", def.States.Debit.Resource, fnArn)
		}
		wantParams := map[string]any{"TableName": "ledger", "Limit": 25.0, "JsonPath.$": "$.input"}
		if !reflect.DeepEqual(def.States.Debit.Parameters, wantParams) {
			t.Errorf("Parameters = %v, want %v", def.States.Debit.Parameters, wantParams)
		}
	})
	t.Run("inline substitutions", func(t *testing.T) {
		if !strings.Contains(string(inline.Definition), `"Resource": "`+fnArn+`"`) || strings.Contains(string(inline.Definition), "${") {
			t.Errorf("inline definition not substituted:\n%s", inline.Definition)
		}
	})
}

func TestStateMachineErrors(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		src     string
		wantErr error
		want    []string
	}{
		{"placeholder without substitution", "testdata/missing_substitution.yaml", "", ErrUnresolved,
			[]string{"missing_substitution.yaml:11: Resources.FromFile.Properties.DefinitionSubstitutions", "${TableName}", "testdata/statemachine/flow.asl.json"}},
		{"missing definition file", "testdata/x.yaml", "Resources:\n  M:\n    Type: AWS::Serverless::StateMachine\n    Properties:\n      DefinitionUri: nope.json\n", ErrInvalid,
			[]string{"x.yaml:5: Resources.M.Properties.DefinitionUri", "nope.json"}},
		{"no definition", "x.yaml", "Resources:\n  M:\n    Type: AWS::Serverless::StateMachine\n", ErrInvalid,
			[]string{"state machine M has no definition"}},
		{"S3 definition", "x.yaml", "Resources:\n  M:\n    Type: AWS::Serverless::StateMachine\n    Properties:\n      DefinitionUri: {Bucket: b, Key: k}\n", ErrUnsupported,
			[]string{"DefinitionUri that is not a local path is not supported locally"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tmpl *Template
			var err error
			if tt.src == "" {
				tmpl, err = Load(tt.path)
			} else {
				tmpl, err = Parse(tt.path, []byte(tt.src))
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = tmpl.StateMachines(Env{})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestTablesFromFixture(t *testing.T) {
	tmpl := load(t, "testdata/tables.yaml")
	tables, err := tmpl.Tables(Env{})
	if err != nil {
		t.Fatalf("Tables: %v", err)
	}
	if len(tables) != 2 || tables[0].LogicalID != "Orders" || tables[1].LogicalID != "Sessions" {
		t.Fatalf("tables = %+v, want Orders and Sessions (Archive's condition is false)", tables)
	}
	key := func(name string, kt types.KeyType) types.KeySchemaElement {
		return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: kt}
	}
	attr := func(name string, at types.ScalarAttributeType) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: at}
	}
	wantOrders := &dynamodb.CreateTableInput{
		TableName:   aws.String("orders-test"),
		BillingMode: types.BillingModeProvisioned,
		ProvisionedThroughput: &types.ProvisionedThroughput{
			ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(2),
		},
		AttributeDefinitions: []types.AttributeDefinition{
			attr("pk", types.ScalarAttributeTypeS), attr("sk", types.ScalarAttributeTypeS),
			attr("status", types.ScalarAttributeTypeS), attr("amount", types.ScalarAttributeTypeN),
		},
		KeySchema: []types.KeySchemaElement{key("pk", types.KeyTypeHash), key("sk", types.KeyTypeRange)},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("ByStatus"),
			KeySchema:  []types.KeySchemaElement{key("status", types.KeyTypeHash)},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"amount"}},
			ProvisionedThroughput: &types.ProvisionedThroughput{
				ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1),
			},
		}},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{
			IndexName:  aws.String("ByAmount"),
			KeySchema:  []types.KeySchemaElement{key("pk", types.KeyTypeHash), key("amount", types.KeyTypeRange)},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	}
	t.Run("Orders input", func(t *testing.T) {
		if !reflect.DeepEqual(tables[0].Input, wantOrders) {
			g, _ := json.MarshalIndent(tables[0].Input, "", " ")
			w, _ := json.MarshalIndent(wantOrders, "", " ")
			t.Errorf("got  %s\nwant %s", g, w)
		}
	})
	t.Run("disabled TTL is kept but not enabled", func(t *testing.T) {
		ttl := tables[0].TimeToLive
		if ttl == nil || aws.ToString(ttl.AttributeName) != "ttl" || aws.ToBool(ttl.Enabled) {
			t.Errorf("TimeToLive = %+v", ttl)
		}
	})
	t.Run("enabled TTL", func(t *testing.T) {
		ttl := tables[1].TimeToLive
		if ttl == nil || aws.ToString(ttl.AttributeName) != "expiresAt" || !aws.ToBool(ttl.Enabled) {
			t.Errorf("TimeToLive = %+v", ttl)
		}
	})
	t.Run("condition true", func(t *testing.T) {
		tables, err := tmpl.Tables(Env{Parameters: map[string]string{"Env": "prod"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(tables) != 3 || aws.ToString(tables[0].Input.TableName) != "orders-prod" {
			t.Errorf("tables = %d, first %s", len(tables), aws.ToString(tables[0].Input.TableName))
		}
	})
}

func TestTableErrors(t *testing.T) {
	const head = "Resources:\n  T:\n    Type: AWS::DynamoDB::Table\n    Properties:\n      BillingMode: PAY_PER_REQUEST\n"
	const keys = "      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]\n      KeySchema: [{AttributeName: pk, KeyType: HASH}]\n"
	tests := []struct {
		name    string
		src     string
		wantErr error
		want    string
	}{
		{"unknown table property", head + keys + "      KinesisStreamSpecification: {StreamArn: x}\n", ErrUnknownProperty,
			`t.yaml:8: Resources.T.Properties.KinesisStreamSpecification: unknown property: "KinesisStreamSpecification" of AWS::DynamoDB::Table`},
		{"unknown index property", head + keys + "      GlobalSecondaryIndexes:\n        - IndexName: I\n          KeySchema: [{AttributeName: pk, KeyType: HASH}]\n          Projection: {ProjectionType: ALL}\n          Sparse: true\n", ErrUnknownProperty,
			`t.yaml:12: Resources.T.Properties.GlobalSecondaryIndexes[0].Sparse: unknown property: "Sparse" of GlobalSecondaryIndex`},
		{"unknown key schema field", head + "      KeySchema: [{AttributeName: pk, KeyType: HASH, Order: 1}]\n", ErrUnknownProperty, `"Order" of KeySchema element`},
		{"no key schema", head, ErrInvalid, "KeySchema is required"},
		{"index without projection", head + keys + "      LocalSecondaryIndexes:\n        - IndexName: I\n          KeySchema: [{AttributeName: pk, KeyType: HASH}]\n", ErrInvalid, "Projection is required"},
		{"attribute without type", head + "      AttributeDefinitions: [{AttributeName: pk}]\n" + "      KeySchema: [{AttributeName: pk, KeyType: HASH}]\n", ErrInvalid, "AttributeType is required"},
		{"throughput not a number", head + keys + "      ProvisionedThroughput: {ReadCapacityUnits: lots, WriteCapacityUnits: 1}\n", ErrInvalid, "ReadCapacityUnits must be an integer"},
		{"enabled TTL without attribute", head + keys + "      TimeToLiveSpecification: {Enabled: true}\n", ErrInvalid, "AttributeName is required when Enabled"},
		{"key schema not a list", head + "      KeySchema: pk\n", ErrInvalid, "KeySchema must be a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse("t.yaml", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tmpl.Tables(Env{})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestIgnoredTablePropertiesAreDocumented(t *testing.T) {
	for _, p := range []string{"PointInTimeRecoverySpecification", "SSESpecification", "Tags", "DeletionProtectionEnabled", "ContributorInsightsSpecification"} {
		t.Run(p, func(t *testing.T) {
			if ignoredTableProperties[p] == "" {
				t.Errorf("%s is not in ignoredTableProperties", p)
			}
		})
	}
}

func TestAPIRoutesFromIncludedDefinition(t *testing.T) {
	tmpl := load(t, "testdata/include.yaml")
	tests := []struct {
		name       string
		definition string
		want       []Route
		wantErr    error
	}{
		{name: "routes of the aws_proxy integrations", definition: "include/api.yaml", want: []Route{
			{Path: "/things", Method: "POST", FunctionLogicalID: "Things", RestApiID: "ThingsApi", Authorizer: "AWS_IAM"},
			{Path: "/things/{id}", Method: "GET", FunctionLogicalID: "Things", RestApiID: "ThingsApi", Authorizer: AuthorizerNone},
		}},
		{name: "short-form tags are refused", definition: "include/short.yaml", wantErr: ErrSyntax},
		{name: "a missing file", definition: "include/none.yaml", wantErr: ErrUnresolved},
		{name: "a snippet in S3", definition: "s3://bucket/api.yaml", wantErr: ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			routes, err := tmpl.APIRoutes(Env{Parameters: map[string]string{"Definition": tc.definition}})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(routes, tc.want) {
				t.Errorf("routes:\n got %+v\nwant %+v", routes, tc.want)
			}
		})
	}
}
