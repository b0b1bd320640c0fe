// Package client is a Go client of the transfers API of
// github.com/exactlyonce/transfers: exactly-once money transfers behind an
// Idempotency-Key header, served by API Gateway with AWS_IAM
// authorization. Its contract is api/openapi.yaml in that repository.
//
// # Signing
//
// Every request is signed with AWS Signature Version 4 (the SDK's
// v4.Signer) for the service "execute-api" in the stack's Region, over the
// SHA-256 of its body. The signature's principal is the caller: it owns
// the caller's Idempotency-Keys and accounts. Credentials come from the
// AWS SDK's default chain (environment, shared config and credentials
// files, SSO, web identity, container and instance roles) unless
// WithCredentials gives a provider; the Region comes from the same
// configuration unless WithRegion gives it. Temporary credentials add the
// X-Amz-Security-Token header.
//
// # Retries
//
// A request that gets no answer (a transport error), a 5xx or a 429 is sent
// again, signed anew, with the same Idempotency-Key and the same body, after
// the answer's Retry-After when it has one, else after an exponential
// backoff with jitter; up to RetryPolicy.MaxAttempts attempts in all, and
// never past the context's deadline. Another 4xx is never retried: it is
// returned at once as a *Problem. The same key makes retrying a POST
// safe: the service moves the money at most once per key.
//
// # Errors
//
// The API answers every refusal with an RFC 9457 problem document
// (application/problem+json) with a stable code. Methods return it as a
// *Problem, wrapped with the operation; errors.As finds it, and errors.Is
// compares its code with the Code constants:
//
//	if errors.Is(err, client.CodeInsufficientFunds) { ... }
//
// # Pages
//
// ListTransfers and ListEntries read one page with a cursor; Transfers and
// Entries iterate over every item, page after page.
package client
