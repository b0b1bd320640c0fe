package cfn

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// StateMachine is an AWS::Serverless::StateMachine or
// AWS::StepFunctions::StateMachine.
type StateMachine struct {
	LogicalID string
	Name      string
	ARN       string
	// Type is STANDARD (the default) or EXPRESS.
	Type string
	// DefinitionUri is the definition file as written, relative to the
	// template's directory; "" for an inline definition.
	DefinitionUri string
	// Definition is the definition text with DefinitionSubstitutions
	// applied.
	Definition []byte
	RoleArn    string
}

// Default state machine type.
const DefaultStateMachineType = "STANDARD"

// StateMachines returns the template's state machines (those whose
// condition holds) in document order.
func (t *Template) StateMachines(env Env) ([]StateMachine, error) {
	r, err := NewResolver(t, env)
	if err != nil {
		return nil, err
	}
	var out []StateMachine
	resources, err := r.existing(TypeServerlessSM, TypeStepFunctionsSM)
	if err != nil {
		return nil, err
	}
	for _, res := range resources {
		sm, err := r.stateMachine(res)
		if err != nil {
			return nil, err
		}
		out = append(out, sm)
	}
	return out, nil
}

func (r *Resolver) stateMachine(res *Resource) (StateMachine, error) {
	sam := res.Type == TypeServerlessSM
	sm := StateMachine{LogicalID: res.LogicalID, Type: DefaultStateMachineType}
	var err error
	if sm.Name, err = r.PhysicalName(res); err != nil {
		return StateMachine{}, err
	}
	arn, err := stateMachineARN(r, res, sm.Name)
	if err != nil {
		return StateMachine{}, err
	}
	sm.ARN = arn.(string)
	p := res.Properties
	// A local file: SAM's DefinitionUri, or the DefinitionS3Location of
	// AWS::StepFunctions::StateMachine, which sam package uploads.
	typeProp, roleProp, uriProp, stringProp := "StateMachineType", "RoleArn", "DefinitionS3Location", "DefinitionString"
	if sam {
		typeProp, roleProp, uriProp, stringProp = "Type", "Role", "DefinitionUri", ""
	}
	if n := p.Get(typeProp); n != nil {
		if sm.Type, err = r.String(n); err != nil {
			return StateMachine{}, err
		}
	}
	if n := p.Get(roleProp); n != nil {
		if sm.RoleArn, err = r.String(n); err != nil {
			return StateMachine{}, err
		}
	} else if sam {
		v, err := r.getAtt(p, res.LogicalID+implicitRoleIDPostfix, "Arn")
		if err != nil {
			return StateMachine{}, err
		}
		sm.RoleArn = v.(string)
	}

	var text []byte
	source := res.LogicalID + " Definition"
	switch {
	case uriProp != "" && p.Has(uriProp):
		n := p.Get(uriProp)
		v, err := r.Value(n)
		if err != nil {
			return StateMachine{}, err
		}
		uri, ok := v.(string)
		if !ok || strings.HasPrefix(uri, "s3://") {
			return StateMachine{}, r.unsupported(n, uriProp+" that is not a local path")
		}
		sm.DefinitionUri = uri
		path := uri
		if !filepath.IsAbs(path) {
			path = filepath.Join(r.t.Dir, uri)
		}
		if text, err = os.ReadFile(path); err != nil {
			return StateMachine{}, r.errAt(n, ErrInvalid, "read %s: %v", uriProp, err)
		}
		source = path
	case stringProp != "" && p.Has(stringProp):
		s, err := r.String(p.Get(stringProp))
		if err != nil {
			return StateMachine{}, err
		}
		text = []byte(s)
	case p.Has("Definition"):
		v, err := r.Value(p.Get("Definition"))
		if err != nil {
			return StateMachine{}, err
		}
		if text, err = json.MarshalIndent(v, "", "  "); err != nil {
			return StateMachine{}, r.errAt(p.Get("Definition"), ErrInvalid, "encode Definition: %v", err)
		}
	default:
		return StateMachine{}, r.errAt(p, ErrInvalid, "state machine %s has no definition", res.LogicalID)
	}
	if sm.Definition, err = r.substituteDefinition(p, text, source); err != nil {
		return StateMachine{}, err
	}
	return sm, nil
}

var definitionPlaceholder = regexp.MustCompile(`\$\{([^}]*)\}`)

// substituteDefinition replaces each ${Key} of the definition text with
// the resolved value of DefinitionSubstitutions.Key, as Step Functions
// does on deployment. A placeholder without a substitution is an error:
// deployed, it would stay in the definition as literal text.
func (r *Resolver) substituteDefinition(props *Node, text []byte, source string) ([]byte, error) {
	subs := props.Get("DefinitionSubstitutions")
	values := map[string]string{}
	if subs != nil {
		if subs.Kind != KindMapping {
			return nil, r.errAt(subs, ErrInvalid, "DefinitionSubstitutions must be a mapping")
		}
		for _, k := range subs.Keys {
			v, err := r.Value(subs.Get(k))
			if err != nil {
				return nil, err
			}
			s, ok := stringify(v)
			if !ok {
				return nil, r.errAt(subs.Get(k), ErrInvalid, "substitution %s must be a string, number or boolean, got %s", k, describe(v))
			}
			values[k] = s
		}
	}
	var missing []string
	out := definitionPlaceholder.ReplaceAllFunc(text, func(m []byte) []byte {
		key := string(m[2 : len(m)-1])
		v, ok := values[key]
		if !ok {
			missing = append(missing, key)
			return m
		}
		return []byte(v)
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		at := subs
		if at == nil {
			at = props
		}
		return nil, &Error{File: r.t.File, Line: at.Line, Path: at.Path,
			Err: fmt.Errorf("%w: ${%s} in %s has no DefinitionSubstitutions entry", ErrUnresolved, missing[0], source)}
	}
	return out, nil
}
