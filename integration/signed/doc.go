// Package signed drives the local stack through the public Go client
// (github.com/exactlyonce/transfers/client) with the local API in its SigV4
// mode: every request is signed with SigV4 for execute-api and verified
// with the stack's known keys, as the deployed API's AWS_IAM authorization
// does, and the signing principal is the caller.
//
// The tests carry the build tag integration:
//
//	go test -race -count=1 -tags integration ./integration/signed/
//
// TestMain starts the whole stack in-process, with its own DynamoDB Local
// (see package integration), and stops it when the tests end.
package signed
