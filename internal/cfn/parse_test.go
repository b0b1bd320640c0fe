package cfn

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// dump renders a node compactly: scalars as text (non-strings with their
// tag), lists as [a,b], mappings as {k:v}, intrinsics as Fn(arg).
func dump(n *Node) string {
	switch {
	case n == nil:
		return "<nil>"
	case n.Kind == KindNull:
		return "null"
	case n.Kind == KindScalar:
		if n.Tag != "!!str" {
			return n.Value + ":" + strings.TrimPrefix(n.Tag, "!!")
		}
		return n.Value
	case n.Kind == KindSequence:
		parts := make([]string, len(n.Items))
		for i, it := range n.Items {
			parts[i] = dump(it)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case n.Kind == KindMapping:
		parts := make([]string, len(n.Keys))
		for i, k := range n.Keys {
			parts[i] = k + ":" + dump(n.Get(k))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case n.Kind == KindIntrinsic:
		return n.Fn + "(" + dump(n.Arg) + ")"
	}
	return fmt.Sprintf("kind %d", n.Kind)
}

// parseValue parses a template whose resource property X is expr.
func parseValue(t *testing.T, expr string) *Node {
	t.Helper()
	src := "Resources:\n  R:\n    Type: Test::Thing\n    Properties:\n      X: " + expr + "\n"
	tmpl, err := Parse("value.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	return tmpl.Resources["R"].Properties.Get("X")
}

func TestParseIntrinsicForms(t *testing.T) {
	tests := []struct {
		name  string
		forms []string // every form must parse to want
		want  string
	}{
		{"Ref", []string{`!Ref Stage`, `{Ref: Stage}`, `{"Ref": "Stage"}`}, "Ref(Stage)"},
		{"Ref pseudo parameter", []string{`!Ref AWS::Region`, `{Ref: "AWS::Region"}`}, "Ref(AWS::Region)"},
		{"Ref keeps number-like names as strings", []string{`!Ref 123`}, "Ref(123)"},
		{"Condition", []string{`!Condition IsProd`}, "Condition(IsProd)"},
		{"Condition long form is a plain key", []string{`{Condition: IsProd}`}, "{Condition:IsProd}"},
		{"GetAtt", []string{`!GetAtt Table.Arn`, `!GetAtt [Table, Arn]`, `{"Fn::GetAtt": [Table, Arn]}`, `{"Fn::GetAtt": Table.Arn}`}, "Fn::GetAtt([Table,Arn])"},
		{"GetAtt dotted attribute", []string{`!GetAtt Db.Endpoint.Address`, `{"Fn::GetAtt": [Db, Endpoint.Address]}`}, "Fn::GetAtt([Db,Endpoint.Address])"},
		{"Sub string", []string{`!Sub "${AWS::Region}-x"`, `{"Fn::Sub": "${AWS::Region}-x"}`}, "Fn::Sub(${AWS::Region}-x)"},
		{"Sub with variables", []string{`!Sub ["${A}", {A: !Ref B}]`, `{"Fn::Sub": ["${A}", {A: {Ref: B}}]}`}, "Fn::Sub([${A},{A:Ref(B)}])"},
		{"Join", []string{`!Join [",", [a, !Ref B]]`, `{"Fn::Join": [",", [a, {Ref: B}]]}`}, "Fn::Join([,,[a,Ref(B)]])"},
		{"Select", []string{`!Select [1, [a, b]]`, `{"Fn::Select": [1, [a, b]]}`}, "Fn::Select([1:int,[a,b]])"},
		{"Split", []string{`!Split [",", "a,b"]`, `{"Fn::Split": [",", "a,b"]}`}, "Fn::Split([,,a,b])"},
		{"If", []string{`!If [C, a, !Ref AWS::NoValue]`, `{"Fn::If": [C, a, {Ref: AWS::NoValue}]}`}, "Fn::If([C,a,Ref(AWS::NoValue)])"},
		{"Equals", []string{`!Equals [!Ref S, prod]`, `{"Fn::Equals": [{Ref: S}, prod]}`}, "Fn::Equals([Ref(S),prod])"},
		{"Not", []string{`!Not [!Condition C]`, `{"Fn::Not": [!Condition C]}`}, "Fn::Not([Condition(C)])"},
		{"Not long form", []string{`{"Fn::Not": [{Condition: C}]}`}, "Fn::Not([{Condition:C}])"},
		{"And", []string{`!And [!Condition A, !Condition B]`}, "Fn::And([Condition(A),Condition(B)])"},
		{"And long form", []string{`{"Fn::And": [{Condition: A}, {Condition: B}]}`}, "Fn::And([{Condition:A},{Condition:B}])"},
		{"Or", []string{`!Or [!Condition A, !Equals [a, b]]`, `{"Fn::Or": [!Condition A, {"Fn::Equals": [a, b]}]}`}, "Fn::Or([Condition(A),Fn::Equals([a,b])])"},
		{"FindInMap", []string{`!FindInMap [M, !Ref K, V]`, `{"Fn::FindInMap": [M, {Ref: K}, V]}`}, "Fn::FindInMap([M,Ref(K),V])"},
		{"Base64", []string{`!Base64 text`, `{"Fn::Base64": text}`}, "Fn::Base64(text)"},
		{"GetAZs", []string{`!GetAZs ""`, `!GetAZs`, `{"Fn::GetAZs": ""}`}, "Fn::GetAZs()"},
		{"ImportValue", []string{`!ImportValue shared-name`, `{"Fn::ImportValue": shared-name}`}, "Fn::ImportValue(shared-name)"},
		{"ImportValue of Sub", []string{`!ImportValue {"Fn::Sub": "${S}-x"}`, `{"Fn::ImportValue": !Sub "${S}-x"}`}, "Fn::ImportValue(Fn::Sub(${S}-x))"},
		{"Cidr", []string{`!Cidr [10.0.0.0/16, 4, 8]`}, "Fn::Cidr([10.0.0.0/16,4:int,8:int])"},
		{"Transform", []string{`!Transform {Name: Macro}`}, "Fn::Transform({Name:Macro})"},
		{"nested short forms", []string{`!Join ["", [!Ref A, !GetAtt B.Arn, !Sub "${C}"]]`}, "Fn::Join([,[Ref(A),Fn::GetAtt([B,Arn]),Fn::Sub(${C})]])"},
		{"multi-key mapping with Ref is not an intrinsic", []string{`{Ref: A, Other: B}`}, "{Ref:A,Other:B}"},
		{"plain scalars keep their type", []string{`[1, 1.5, true, x, null]`}, "[1:int,1.5:float,true:bool,x,null]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, form := range tt.forms {
				if got := dump(parseValue(t, form)); got != tt.want {
					t.Errorf("%s parses to %s, want %s", form, got, tt.want)
				}
			}
		})
	}
}

func TestParseKeepsPositions(t *testing.T) {
	src := `Resources:
  First:
    Type: Test::Thing
  Second:
    Type: Test::Thing
    Properties:
      List:
        - a
        - !Ref First
`
	tmpl, err := Parse("pos.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	second := tmpl.Resources["Second"]
	item := second.Properties.Get("List").Items[1]
	tests := []struct {
		name     string
		gotLine  int
		wantLine int
		gotPath  string
		wantPath string
	}{
		{"resource", second.Line, 4, "", ""},
		{"list", second.Properties.Get("List").Line, 7, second.Properties.Get("List").Path, "Resources.Second.Properties.List"},
		{"intrinsic item", item.Line, 9, item.Path, "Resources.Second.Properties.List[1]"},
		{"intrinsic argument", item.Arg.Line, 9, item.Arg.Path, "Resources.Second.Properties.List[1].Ref"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.gotLine != tt.wantLine {
				t.Errorf("line = %d, want %d", tt.gotLine, tt.wantLine)
			}
			if tt.gotPath != tt.wantPath {
				t.Errorf("path = %q, want %q", tt.gotPath, tt.wantPath)
			}
		})
	}
	if got := tmpl.ResourceOrder; strings.Join(got, ",") != "First,Second" {
		t.Errorf("ResourceOrder = %v", got)
	}
}

func TestParseErrors(t *testing.T) {
	const head = "Resources:\n  Foo:\n    Type: Test::Thing\n    Properties:\n"
	tests := []struct {
		name    string
		src     string
		wantErr error
		want    string // prefix of the message
	}{
		{"unknown short tag", head + "      A: 1\n      X: !Reff Bar\n", ErrUnknownTag,
			"bad.yaml:6: Resources.Foo.Properties.X: unknown tag !Reff"},
		{"unknown tag nested in a list", head + "      X:\n        - ok\n        - !Joinn [a, b]\n", ErrUnknownTag,
			"bad.yaml:7: Resources.Foo.Properties.X[1]: unknown tag !Joinn"},
		{"unknown long-form function", head + "      X:\n        Fn::Concat: [a, b]\n", ErrUnknownFunction,
			"bad.yaml:6: Resources.Foo.Properties.X: unknown intrinsic function: Fn::Concat"},
		{"alias", head + "      A: &anchor x\n      X: *anchor\n", ErrSyntax,
			"bad.yaml:6: Resources.Foo.Properties.X: syntax error: YAML aliases are not allowed"},
		{"duplicate key", head + "      X: 1\n      X: 2\n", ErrSyntax,
			"bad.yaml:6: Resources.Foo.Properties.X: syntax error: duplicate key"},
		{"YAML syntax", head + "      X: [a, b\n", ErrSyntax, "bad.yaml:"},
		{"tab indentation", "Resources:\n\tFoo: 1\n", ErrSyntax, "bad.yaml:2: syntax error"},
		{"GetAtt without attribute", head + "      X: !GetAtt Bar\n", ErrInvalid,
			"bad.yaml:5: Resources.Foo.Properties.X: invalid value: Fn::GetAtt \"Bar\" must be LogicalId.Attribute"},
		{"If with two arguments", head + "      X: !If [C, a]\n", ErrInvalid, "bad.yaml:5: Resources.Foo.Properties.X: invalid value: Fn::If takes"},
		{"Ref of a list", head + "      X: !Ref [a]\n", ErrInvalid, "bad.yaml:5: Resources.Foo.Properties.X: invalid value: Ref takes a name"},
		{"Sub of a mapping", head + "      X: !Sub {a: b}\n", ErrInvalid, "bad.yaml:5: Resources.Foo.Properties.X: invalid value: Fn::Sub takes"},
		{"unknown top-level section", "Resource:\n  Foo: {Type: X}\n", ErrInvalid, "bad.yaml:1: Resource: invalid value: unknown top-level section"},
		{"no Resources", "Description: x\n", ErrInvalid, "bad.yaml:1: invalid value: the Resources section is required"},
		{"resource without Type", "Resources:\n  Foo:\n    Properties: {}\n", ErrInvalid, "bad.yaml:2: Resources.Foo: invalid value: resource Foo needs a Type"},
		{"unknown resource attribute", "Resources:\n  Foo:\n    Type: X\n    Propertes: {}\n", ErrInvalid, "bad.yaml:4: Resources.Foo.Propertes: invalid value: unknown resource attribute"},
		{"undeclared resource condition", "Resources:\n  Foo:\n    Type: X\n    Condition: Nope\n", ErrUnresolved, "bad.yaml:4: Resources.Foo.Condition: unresolved reference: condition Nope is not declared"},
		{"unknown Globals section", "Globals:\n  Functions:\n    Timeout: 3\nResources:\n  Foo: {Type: X}\n", ErrInvalid, "bad.yaml:2: Globals.Functions: invalid value: Globals section \"Functions\""},
		{"unsupported transform", "Transform: AWS::Include\nResources:\n  Foo: {Type: X}\n", ErrUnsupported, "bad.yaml:1: Transform: not supported locally: transform AWS::Include"},
		{"parameter without Type", "Parameters:\n  P: {Default: x}\nResources:\n  Foo: {Type: X}\n", ErrInvalid, "bad.yaml:2: Parameters.P: invalid value: parameter P needs a Type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", []byte(tt.src))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "bad.yaml" {
				t.Errorf("err %v is not an *Error naming the file", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %q\nwant prefix %q", err, tt.want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/nope.yaml")
	if err == nil || !strings.Contains(err.Error(), "testdata/nope.yaml") {
		t.Errorf("Load(missing) = %v, want an error naming the file", err)
	}
}

func TestParseSections(t *testing.T) {
	tmpl, err := Load("testdata/resolve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, got, want string
	}{
		{"parameter default", tmpl.Parameters["Stage"].Default, "dev"},
		{"numeric parameter default", tmpl.Parameters["Count"].Default, "3"},
		{"parameter type", tmpl.Parameters["Names"].Type, "CommaDelimitedList"},
		{"allowed values", strings.Join(tmpl.Parameters["Stage"].AllowedValues, ","), "dev,prod"},
		{"resource type", tmpl.Resources["Table"].Type, TypeTable},
		{"resource condition", tmpl.Resources["ProdOnly"].Condition, "IsProd"},
		{"transform", strings.Join(tmpl.Transform, ","), serverlessTransform},
		{"implicit function role", tmpl.Resources["PlainFnRole"].Type, TypeRole},
		{"implicit state machine role", tmpl.Resources["MachineRole"].Type, TypeRole},
		{"conditions", fmt.Sprint(len(tmpl.Conditions)), "5"},
		{"dir", tmpl.Dir, "testdata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	if _, ok := tmpl.Resources["FnRole"]; ok {
		t.Error("a function with a Role got an implicit role")
	}
}
