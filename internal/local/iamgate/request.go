package iamgate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// check is one action on one resource that a request needs allowed.
type check struct {
	Action   string
	Resource string
}

// target splits an X-Amz-Target header ("DynamoDB_20120810.PutItem") into
// the service's IAM prefix and the operation.
func target(header string) (service, op string, err error) {
	prefix, op, ok := strings.Cut(header, ".")
	if !ok || op == "" {
		return "", "", fmt.Errorf("X-Amz-Target %q names no operation", header)
	}
	switch prefix {
	case "DynamoDB_20120810":
		return "dynamodb", op, nil
	case "AWSStepFunctions":
		return "states", op, nil
	}
	return "", "", fmt.Errorf("X-Amz-Target %q: the local IAM check knows DynamoDB and Step Functions requests only", header)
}

// arns builds the ARNs of a region and account.
type arns struct{ partition, region, account string }

func (a arns) table(name string) string {
	if strings.HasPrefix(name, "arn:") {
		return name
	}
	return "arn:" + a.partition + ":dynamodb:" + a.region + ":" + a.account + ":table/" + name
}

// checks returns what a request needs allowed: for DynamoDB, the
// operation on each table (or index) it names, and for a transaction each
// of its items' actions (TransactWriteItems needs ConditionCheckItem,
// PutItem, UpdateItem or DeleteItem on each item's table, as DynamoDB's
// documentation says); for Step Functions, the operation on the state
// machine or execution. An operation the gate cannot map is an error:
// never allowed unchecked.
func (a arns) checks(service, op string, body []byte) ([]check, error) {
	var in map[string]json.RawMessage
	if len(body) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, fmt.Errorf("%s:%s: the request body is not a JSON object: %v", service, op, err)
		}
	}
	str := func(m map[string]json.RawMessage, k string) string {
		var s string
		_ = json.Unmarshal(m[k], &s)
		return s
	}
	action := service + ":" + op
	switch service {
	case "dynamodb":
		switch op {
		case "GetItem", "PutItem", "UpdateItem", "DeleteItem", "DescribeTable", "DescribeTimeToLive",
			"UpdateTimeToLive", "DeleteTable", "CreateTable", "UpdateTable", "DescribeContinuousBackups":
			t := str(in, "TableName")
			if t == "" {
				return nil, fmt.Errorf("%s: no TableName", action)
			}
			return []check{{action, a.table(t)}}, nil
		case "Query", "Scan":
			t := str(in, "TableName")
			if t == "" {
				return nil, fmt.Errorf("%s: no TableName", action)
			}
			res := a.table(t)
			if ix := str(in, "IndexName"); ix != "" {
				res += "/index/" + ix
			}
			return []check{{action, res}}, nil
		case "ListTables":
			return []check{{action, "*"}}, nil
		case "BatchGetItem", "BatchWriteItem":
			var items map[string]json.RawMessage
			_ = json.Unmarshal(in["RequestItems"], &items)
			if len(items) == 0 {
				return nil, fmt.Errorf("%s: no RequestItems", action)
			}
			var out []check
			for t := range items {
				out = append(out, check{action, a.table(t)})
			}
			return out, nil
		case "TransactWriteItems", "TransactGetItems":
			var items []map[string]map[string]json.RawMessage
			if err := json.Unmarshal(in["TransactItems"], &items); err != nil || len(items) == 0 {
				return nil, fmt.Errorf("%s: no TransactItems", action)
			}
			kinds := map[string]string{"ConditionCheck": "ConditionCheckItem", "Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "Get": "GetItem"}
			var out []check
			for i, item := range items {
				if len(item) != 1 {
					return nil, fmt.Errorf("%s: TransactItems[%d] must hold one operation", action, i)
				}
				for kind, m := range item {
					itemAction, ok := kinds[kind]
					if !ok {
						return nil, fmt.Errorf("%s: TransactItems[%d]: operation %s is not known to the local IAM check", action, i, kind)
					}
					t := str(m, "TableName")
					if t == "" {
						return nil, fmt.Errorf("%s: TransactItems[%d].%s: no TableName", action, i, kind)
					}
					out = append(out, check{"dynamodb:" + itemAction, a.table(t)})
				}
			}
			return out, nil
		}
	case "states":
		switch op {
		case "StartExecution", "StartSyncExecution", "DescribeStateMachine", "ListExecutions", "UpdateStateMachine", "DeleteStateMachine":
			sm := str(in, "stateMachineArn")
			if sm == "" {
				return nil, fmt.Errorf("%s: no stateMachineArn", action)
			}
			return []check{{action, sm}}, nil
		case "DescribeExecution", "StopExecution", "GetExecutionHistory", "DescribeStateMachineForExecution", "RedriveExecution":
			ex := str(in, "executionArn")
			if ex == "" {
				return nil, fmt.Errorf("%s: no executionArn", action)
			}
			return []check{{action, ex}}, nil
		case "ListStateMachines", "CreateStateMachine":
			return []check{{action, "*"}}, nil
		}
	}
	return nil, fmt.Errorf("%s is not known to the local IAM check (internal/local/iamgate): add how it maps to actions and resources", action)
}
