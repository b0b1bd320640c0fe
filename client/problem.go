package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Code is a problem document's stable code. It is an error, so that
// errors.Is(err, CodeInsufficientFunds) reports whether err holds a
// *Problem with that code.
type Code string

// Error returns the code itself, so that a Code prints as the API sends
// it.
func (c Code) Error() string { return string(c) }

// The API's problem codes (docs/api.md, "Problem codes"; every operation of
// api/openapi.yaml lists those it may answer).
const (
	// 400: nothing was stored.
	CodeIdempotencyKeyMissing   Code = "idempotency_key_missing"
	CodeIdempotencyKeyMalformed Code = "idempotency_key_malformed"
	CodeInvalidRequest          Code = "invalid_request"
	CodeBodyTooLarge            Code = "body_too_large"
	CodeInvalidLimit            Code = "invalid_limit"
	CodeInvalidCursor           Code = "invalid_cursor"
	// 415: the body is not application/json.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	// 403.
	CodeForbidden                  Code = "forbidden"
	CodeCallerUnknown              Code = "caller_unknown"
	CodeMissingAuthenticationToken Code = "missing_authentication_token"
	CodeInvalidSignature           Code = "invalid_signature"
	CodeExpiredToken               Code = "expired_token"
	CodeAccessDenied               Code = "access_denied"
	// 404: no such transfer or account, or another caller's.
	CodeNotFound Code = "not_found"
	// 422: the key belongs to another body; nothing changed.
	CodeIdempotencyKeyReused Code = "idempotency_key_reused"
	// 422, final: the transfer FAILED (Problem.Transfer holds it).
	CodeInsufficientFunds      Code = "insufficient_funds"
	CodeAccountNotFound        Code = "account_not_found"
	CodeCurrencyMismatch       Code = "currency_mismatch"
	CodeAccountClosed          Code = "account_closed"
	CodeDestinationUnavailable Code = "destination_unavailable"
	CodeTransferFailed         Code = "transfer_failed"
	// 429: retried after Retry-After.
	CodeThrottled   Code = "throttled"
	CodeRateLimited Code = "rate_limited"
	// 5xx: retried with the same key.
	CodeInternalError      Code = "internal_error"
	CodeServiceUnavailable Code = "service_unavailable"
	CodeGatewayTimeout     Code = "gateway_timeout"
	// Any other refusal of API Gateway (4xx, 5xx).
	CodeRequestRefused Code = "request_refused"
	CodeGatewayError   Code = "gateway_error"
)

// Problem is a refusal of the API: an RFC 9457 problem document
// (application/problem+json) with the HTTP answer's headers that matter.
// An answer that is not a problem document (from a proxy, say) is a
// Problem too, with no Code and the start of its body as Detail.
type Problem struct {
	// Status is the HTTP status of the answer. (The document's own status
	// member, when it has one, is the same; API Gateway's DEFAULT_4XX
	// and DEFAULT_5XX answers have none.)
	Status int
	// Code is the stable code, meant for programs.
	Code     Code
	Type     string
	Title    string
	Detail   string
	Instance string
	// Errors names each invalid field of an invalid_request.
	Errors []FieldError
	// Transfer is the stored transfer a refusal is about: a transfer the
	// ledger rejected (insufficient_funds, ...) or a forbidden one, as
	// every replay of its key answers it.
	Transfer *Transfer
	// Location is the stored transfer's URL path, when the answer has one.
	Location string
	// Replayed: the answer is the stored answer of an earlier request with
	// the same key (Idempotent-Replayed: true).
	Replayed bool
	// RetryAfter is the answer's Retry-After; 0 without one.
	RetryAfter time.Duration
}

// FieldError is one invalid field of a request (the contract's
// FieldError).
type FieldError struct {
	// Field is the JSON field, or "" for the body as a whole.
	Field  string `json:"field"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// Error describes the problem.
func (p *Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", p.Status)
	if p.Code != "" {
		fmt.Fprintf(&b, " %s", p.Code)
	}
	if p.Title != "" {
		fmt.Fprintf(&b, ": %s", p.Title)
	}
	if p.Detail != "" {
		fmt.Fprintf(&b, ": %s", p.Detail)
	}
	for _, e := range p.Errors {
		fmt.Fprintf(&b, "; %s: %s", e.Field, e.Code)
	}
	return b.String()
}

// Is reports whether target is p's Code, so that errors.Is(err,
// CodeNotFound) matches a not_found problem anywhere in err's chain.
func (p *Problem) Is(target error) bool {
	c, ok := target.(Code)
	return ok && p.Code != "" && p.Code == c
}

// CodeOf returns the Code of the *Problem in err's chain, or "" when it has
// none.
func CodeOf(err error) Code {
	var p *Problem
	if errors.As(err, &p) {
		return p.Code
	}
	return ""
}

// problemDocument is the JSON of a problem document.
type problemDocument struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Detail   string       `json:"detail"`
	Instance string       `json:"instance"`
	Code     Code         `json:"code"`
	Errors   []FieldError `json:"errors"`
	Transfer *Transfer    `json:"transfer"`
}

// maxDetail bounds the Detail of an answer that is not a problem document.
const maxDetail = 512

// decodeProblem reads a refusal.
func decodeProblem(status int, header http.Header, body []byte) *Problem {
	p := &Problem{
		Status:     status,
		Location:   header.Get("Location"),
		Replayed:   header.Get("Idempotent-Replayed") == "true",
		RetryAfter: retryAfter(header, time.Now()),
	}
	var doc problemDocument
	if isJSON(header.Get("Content-Type")) && json.Unmarshal(body, &doc) == nil && doc.Code != "" {
		p.Code, p.Type, p.Title, p.Detail, p.Instance = doc.Code, doc.Type, doc.Title, doc.Detail, doc.Instance
		p.Errors, p.Transfer = doc.Errors, doc.Transfer
		return p
	}
	p.Title = http.StatusText(status)
	detail := strings.TrimSpace(string(body))
	if len(detail) > maxDetail {
		detail = detail[:maxDetail] + "..."
	}
	p.Detail = detail
	return p
}

// isJSON reports whether a Content-Type is application/json,
// application/problem+json or another +json type.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// maxRetryAfter bounds a Retry-After in seconds (a day), far below what
// overflows a time.Duration.
const maxRetryAfter = 24 * 60 * 60

// retryAfter reads Retry-After: a number of seconds (as the API sends it)
// or an HTTP date; 0 when absent or unreadable.
func retryAfter(header http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		switch {
		case secs < 0:
			return 0
		case secs > maxRetryAfter:
			secs = maxRetryAfter
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
