package cfn_test

import (
	"reflect"
	"testing"

	"github.com/exactlyonce/transfers/internal/cfn"
)

// The project's template keeps the workflow's payment data under the
// customer managed key when TableKmsKeyArn is given: the state machine's
// execution history and the reaper's two queues (which hold the
// workflow's status-change events, input included) use the key, and the
// roles that start, read or run the workflow, or send to the failure
// queue, may use it through Step Functions or SQS only. Without the key,
// they keep the AWS owned and SQS managed keys.
func TestPaymentDataEncryption(t *testing.T) {
	const key = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	tmpl := projectTemplate(t)
	value := func(t *testing.T, env cfn.Env, resource, property string) any {
		t.Helper()
		res, ok := tmpl.Resources[resource]
		if !ok {
			t.Fatalf("no resource %s", resource)
		}
		r, err := cfn.NewResolver(tmpl, env)
		if err != nil {
			t.Fatal(err)
		}
		if exists, err := r.Exists(res); err != nil || !exists {
			t.Fatalf("%s does not exist with %v: %v", resource, env.Parameters, err)
		}
		v, err := r.Value(res.Properties.Get(property))
		if err != nil {
			t.Fatalf("%s.%s: %v", resource, property, err)
		}
		return v
	}
	withKey := cfn.Env{Parameters: map[string]string{"TableKmsKeyArn": key}}

	t.Run("state machine", func(t *testing.T) {
		got := value(t, withKey, "TransferStateMachine", "EncryptionConfiguration")
		m, _ := got.(map[string]any)
		if m["Type"] != "CUSTOMER_MANAGED_KMS_KEY" || m["KmsKeyId"] != key {
			t.Errorf("with the key: EncryptionConfiguration %v, want the customer managed key", got)
		}
		got = value(t, cfn.Env{}, "TransferStateMachine", "EncryptionConfiguration")
		if m, _ := got.(map[string]any); m["Type"] != "AWS_OWNED_KEY" {
			t.Errorf("without the key: EncryptionConfiguration %v, want AWS_OWNED_KEY", got)
		}
	})
	for _, queue := range []string{"ReaperDeadLetterQueue", "ReaperFailureQueue"} {
		t.Run(queue, func(t *testing.T) {
			if got := value(t, withKey, queue, "KmsMasterKeyId"); got != key {
				t.Errorf("with the key: KmsMasterKeyId %v, want %s", got, key)
			}
			if got := value(t, withKey, queue, "SqsManagedSseEnabled"); got != nil {
				t.Errorf("with the key: SqsManagedSseEnabled %v, want none", got)
			}
			if got := value(t, cfn.Env{}, queue, "KmsMasterKeyId"); got != nil {
				t.Errorf("without the key: KmsMasterKeyId %v, want none", got)
			}
			if got := value(t, cfn.Env{}, queue, "SqsManagedSseEnabled"); got != true {
				t.Errorf("without the key: SqsManagedSseEnabled %v, want true", got)
			}
		})
	}
	t.Run("roles may use the key", func(t *testing.T) {
		for policy, want := range map[string][]any{
			"WorkflowKeyPolicy":    {map[string]any{"Ref": "OrchestratorFunctionRole"}, map[string]any{"Ref": "ReaperFunctionRole"}, map[string]any{"Ref": "TransferStateMachineRole"}},
			"ReaperQueueKeyPolicy": {map[string]any{"Ref": "ReaperFunctionRole"}},
		} {
			res, ok := tmpl.Resources[policy]
			if !ok {
				t.Errorf("no %s", policy)
				continue
			}
			var roles []any
			for _, n := range res.Properties.Get("Roles").Items {
				ref, _ := n.Arg.Str()
				roles = append(roles, map[string]any{n.Fn: ref})
			}
			if !reflect.DeepEqual(roles, want) {
				t.Errorf("%s roles %v, want %v", policy, roles, want)
			}
			if got := value(t, withKey, policy, "PolicyDocument"); got == nil {
				t.Errorf("%s has no policy", policy)
			}
		}
	})
}
