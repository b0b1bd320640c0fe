package sfnlocal

import (
	"crypto/rand"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxNameLength is the longest execution or state machine name, in
// characters.
const maxNameLength = 80

// validateName checks an execution or state machine name against the
// Step Functions rules: 1-80 characters, none of them white space, brackets
// < > { } [ ], wildcards ? *, the special characters " # % \ ^ | ~ ` $ & , ; : /
// or control characters (U+0000-001F, U+007F-009F).
func validateName(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("name is not valid UTF-8")
	}
	n := utf8.RuneCountInString(name)
	if n < 1 || n > maxNameLength {
		return fmt.Errorf("name must be 1 to %d characters long, got %d", maxNameLength, n)
	}
	for _, r := range name {
		switch {
		case unicode.IsSpace(r):
			return fmt.Errorf("name must not contain white space (%U)", r)
		case r <= 0x1f, r >= 0x7f && r <= 0x9f:
			return fmt.Errorf("name must not contain control characters (%U)", r)
		case strings.ContainsRune("<>{}[]", r):
			return fmt.Errorf("name must not contain brackets (%q)", r)
		case strings.ContainsRune("?*", r):
			return fmt.Errorf("name must not contain wildcard characters (%q)", r)
		case strings.ContainsRune("\"#%\\^|~`$&,;:/", r):
			return fmt.Errorf("name must not contain special characters (%q)", r)
		}
	}
	return nil
}

// newUUID returns a random (version 4) UUID, as Step Functions uses for
// unnamed executions.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// stateMachineARN builds the ARN of state machine name.
func (s *Server) stateMachineARN(name string) string {
	return "arn:aws:states:" + s.cfg.Region + ":" + s.cfg.AccountID + ":stateMachine:" + name
}

// executionARN builds the ARN of execution execName of state machine
// smName.
func (s *Server) executionARN(smName, execName string) string {
	return "arn:aws:states:" + s.cfg.Region + ":" + s.cfg.AccountID + ":execution:" + smName + ":" + execName
}

// parsedARN is a Step Functions ARN split into its parts.
type parsedARN struct {
	region, account, resourceType string
	names                         []string // resource names after the type
}

// parseStatesARN splits arn:aws:states:<region>:<account>:<type>:<names...>.
func parseStatesARN(arn string) (parsedARN, *APIError) {
	parts := strings.Split(arn, ":")
	if len(parts) < 7 || parts[0] != "arn" || parts[2] != "states" {
		return parsedARN{}, invalidArn("Invalid Arn: '%s'", arn)
	}
	if parts[1] != "aws" {
		return parsedARN{}, invalidArn("Invalid Arn: 'Invalid partition: %s'", parts[1])
	}
	return parsedARN{region: parts[3], account: parts[4], resourceType: parts[5], names: parts[6:]}, nil
}

// parseStateMachineARN checks the shape of a state machine ARN and returns
// the state machine name.
func parseStateMachineARN(arn string) (string, *APIError) {
	p, err := parseStatesARN(arn)
	if err != nil {
		return "", err
	}
	if p.resourceType != "stateMachine" {
		return "", invalidArn("Invalid Arn: 'Resource type not valid in this context: %s'", p.resourceType)
	}
	// A version or alias ARN has a second name part; this endpoint has
	// neither, so lookups of such ARNs find no state machine.
	if len(p.names) > 2 || p.names[0] == "" {
		return "", invalidArn("Invalid Arn: 'Invalid state machine ARN: %s'", arn)
	}
	return p.names[0], nil
}

// checkExecutionARN validates the shape of an execution ARN.
func checkExecutionARN(arn string) *APIError {
	p, err := parseStatesARN(arn)
	if err != nil {
		return err
	}
	if p.resourceType != "execution" {
		return invalidArn("Invalid Arn: 'Resource type not valid in this context: %s'", p.resourceType)
	}
	if len(p.names) != 2 || p.names[0] == "" || p.names[1] == "" {
		return invalidArn("Invalid Arn: 'Invalid execution ARN: %s'", arn)
	}
	return nil
}
