package iam

import (
	"errors"
	"testing"
)

// FuzzParsePolicy: parsing any document never panics and fails only with a
// *PolicyError; a parsed policy evaluates without panicking, failing only
// with a *PolicyError, and its Grants name only its Allow statements.
func FuzzParsePolicy(f *testing.F) {
	for _, seed := range []string{
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["dynamodb:PutItem","dynamodb:GetItem"],"Resource":"arn:aws:dynamodb:us-east-1:123456789012:table/T"}]}`,
		`{"Version":"2012-10-17","Statement":{"Effect":"Deny","NotAction":"iam:*","NotResource":"arn:aws:s3:::*","Condition":{"ForAnyValue:StringLike":{"aws:TagKeys":"a*"},"Null":{"k":"true"}}}}`,
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"events.amazonaws.com","AWS":["123456789012","*"]},"Action":"lambda:*","Resource":"arn:aws:lambda:*",
		  "Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:events:*:*:rule/*"},"NumericLessThanIfExists":{"n":1},"DateGreaterThan":{"aws:CurrentTime":"2024-01-01"},"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`,
		`{"Version":"2008-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::${x}/${*}"}]}`,
		`{"Statement":[{"Sid":"x","Effect":"Allow","Action":"*","Resource":"*","Condition":{"Bool":{"k":true}}}]}`,
		`{"Version":"2012-10-17","Statement":[]}`,
		`[1]`,
	} {
		f.Add([]byte(seed))
	}
	req := Request{
		Principal: "arn:aws:iam::123456789012:role/r", Action: "dynamodb:PutItem",
		Resource: "arn:aws:dynamodb:us-east-1:123456789012:table/T",
		Context:  map[string][]string{"aws:TagKeys": {"a", "b"}, "k": {}, "aws:SourceArn": {"arn:aws:events:us-east-1:123456789012:rule/x"}},
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := ParsePolicy("fuzz", doc)
		var pe *PolicyError
		if err != nil {
			if !errors.As(err, &pe) {
				t.Fatalf("ParsePolicy: %v is not a *PolicyError", err)
			}
			return
		}
		identity := true
		for _, st := range p.Statements {
			identity = identity && st.Principal == nil
		}
		var r Result
		if identity {
			r, err = Evaluate(req, []*Policy{p}, nil)
		} else {
			r, err = Evaluate(req, nil, []*Policy{p})
		}
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("Evaluate: %v is not a *PolicyError", err)
		}
		if err == nil && (r.Decision == ExplicitDeny) != (len(r.Denied) > 0) {
			t.Fatalf("Evaluate: %v with Denied %v", r.Decision, r.Denied)
		}
		for _, g := range Grants(p) {
			if p.Statements[g.Statement].Effect != "Allow" {
				t.Fatalf("Grants lists %+v of a %s statement", g, p.Statements[g.Statement].Effect)
			}
		}
	})
}
