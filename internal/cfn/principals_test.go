package cfn_test

import (
	"errors"
	"testing"

	"github.com/exactlyonce/transfers/internal/cfn"
)

// AllowedPrincipals names roles and users. An account's root ARN is
// refused when the stack is created: in the resource policy's Deny, which
// compares aws:PrincipalArn, it would admit only that account's root user
// and lock out every role and user of the account, contrary to what
// "arn:aws:iam::ACCOUNT:root" means in an Allow. Each value of the list is
// checked (CloudFormation applies AllowedPattern to each element of a
// CommaDelimitedList), and the local runtime checks it the same way.
func TestAllowedPrincipals(t *testing.T) {
	tmpl := projectTemplate(t)
	tests := []struct {
		name   string
		value  string
		wantOK bool
	}{
		{"none", "", true},
		{"a role", "arn:aws:iam::123456789012:role/payments", true},
		{"a role with a path and a user", "arn:aws:iam::123456789012:role/service/payments,arn:aws:iam::210987654321:user/ops", true},
		{"a GovCloud role", "arn:aws-us-gov:iam::123456789012:role/payments", true},
		{"an account root", "arn:aws:iam::123456789012:root", false},
		{"a role and an account root", "arn:aws:iam::123456789012:role/payments,arn:aws:iam::210987654321:root", false},
		{"an account id", "123456789012", false},
		{"an assumed-role session", "arn:aws:sts::123456789012:assumed-role/payments/worker-1", false},
		{"a wildcard", "*", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cfn.NewResolver(tmpl, cfn.Env{Parameters: map[string]string{"AllowedPrincipals": tc.value}})
			if tc.wantOK && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.wantOK && !errors.Is(err, cfn.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}
