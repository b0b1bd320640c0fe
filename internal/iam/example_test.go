package iam_test

import (
	"errors"
	"fmt"

	"github.com/exactlyonce/transfers/internal/iam"
)

func ExampleEvaluate() {
	role, err := iam.ParsePolicy("WorkerRole/WorkerRolePolicy0", []byte(`{
		"Version": "2012-10-17",
		"Statement": [
			{"Effect": "Allow", "Action": ["dynamodb:PutItem", "dynamodb:GetItem"],
			 "Resource": "arn:aws:dynamodb:us-east-1:123456789012:table/Transfers"},
			{"Sid": "SecureOnly", "Effect": "Deny", "Action": "*", "Resource": "*",
			 "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
		]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, action := range []string{"dynamodb:PutItem", "dynamodb:UpdateItem"} {
		r, err := iam.Evaluate(iam.Request{
			Principal: "arn:aws:iam::123456789012:role/WorkerRole",
			Account:   "123456789012",
			Action:    action,
			Resource:  "arn:aws:dynamodb:us-east-1:123456789012:table/Transfers",
			Context:   map[string][]string{"aws:SecureTransport": {"true"}},
		}, []*iam.Policy{role}, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(action, r.Decision)
	}

	// A condition key the caller cannot supply is an error, not a guess.
	_, err = iam.Evaluate(iam.Request{
		Principal: "arn:aws:iam::123456789012:role/WorkerRole",
		Action:    "dynamodb:GetItem",
		Resource:  "arn:aws:dynamodb:us-east-1:123456789012:table/Transfers",
	}, []*iam.Policy{role}, nil)
	fmt.Println(errors.Is(err, iam.ErrMissingContextKey))
	fmt.Println(err)

	// Output:
	// dynamodb:PutItem Allow
	// dynamodb:UpdateItem ImplicitDeny
	// true
	// iam: policy "WorkerRole/WorkerRolePolicy0" Statement[1] (Sid "SecureOnly") Condition key "aws:SecureTransport": operator "Bool" names a key the request context does not hold, so the condition cannot be evaluated locally
}

func ExampleEvaluate_resourcePolicy() {
	permission, err := iam.ParsePolicy("Worker/NightlyPermission", map[string]any{
		"Version": "2012-10-17",
		"Statement": map[string]any{
			"Effect":    "Allow",
			"Principal": map[string]any{"Service": "events.amazonaws.com"},
			"Action":    "lambda:InvokeFunction",
			"Resource":  "arn:aws:lambda:us-east-1:123456789012:function:Worker",
			"Condition": map[string]any{
				"ArnLike":      map[string]any{"aws:SourceArn": "arn:aws:events:us-east-1:123456789012:rule/*"},
				"StringEquals": map[string]any{"aws:SourceAccount": "123456789012"},
			},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, source := range []string{
		"arn:aws:events:us-east-1:123456789012:rule/Nightly",
		"arn:aws:sns:us-east-1:123456789012:alerts",
	} {
		r, err := iam.Evaluate(iam.Request{
			Principal:          "events.amazonaws.com",
			PrincipalIsService: true,
			Account:            "123456789012",
			Action:             "lambda:InvokeFunction",
			Resource:           "arn:aws:lambda:us-east-1:123456789012:function:Worker",
			Context: map[string][]string{
				"aws:SourceArn":     {source},
				"aws:SourceAccount": {"123456789012"},
			},
		}, nil, []*iam.Policy{permission})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(source, r.Decision)
	}
	// Output:
	// arn:aws:events:us-east-1:123456789012:rule/Nightly Allow
	// arn:aws:sns:us-east-1:123456789012:alerts ImplicitDeny
}

func ExampleGrants() {
	role, err := iam.ParsePolicy("WorkerRole/WorkerRolePolicy0", []byte(`{
		"Version": "2012-10-17",
		"Statement": [
			{"Sid": "Table", "Effect": "Allow", "Action": ["dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:DeleteItem"],
			 "Resource": "arn:aws:dynamodb:us-east-1:123456789012:table/Transfers"}
		]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	used := map[iam.Match]bool{}
	for _, action := range []string{"dynamodb:PutItem", "dynamodb:GetItem"} {
		r, err := iam.Evaluate(iam.Request{
			Principal: "arn:aws:iam::123456789012:role/WorkerRole",
			Action:    action,
			Resource:  "arn:aws:dynamodb:us-east-1:123456789012:table/Transfers",
		}, []*iam.Policy{role}, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, m := range r.Allowed {
			used[m] = true
		}
	}
	for _, g := range iam.Grants(role) {
		if !used[g] {
			fmt.Printf("unused: %s statement %d (%s): %s on %s\n", g.Policy, g.Statement, g.Sid, g.Action, g.Resource)
		}
	}
	// Output:
	// unused: WorkerRole/WorkerRolePolicy0 statement 0 (Table): dynamodb:DeleteItem on arn:aws:dynamodb:us-east-1:123456789012:table/Transfers
}
