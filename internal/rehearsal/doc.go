// Package rehearsal holds the deploy rehearsal's end-to-end tests: the
// stack's flows run on the local stack under the IAM checks of the
// SAM-transformed template (internal/local/iamgate), as AWS would run
// them, and each statement of the stack's own policies is shown to be
// needed by removing it.
package rehearsal
