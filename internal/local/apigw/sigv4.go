package apigw

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Credential is an access key the server knows in SigV4 mode
// (Config.Credentials): its secret, the session token of temporary
// credentials, and the IAM principal the key stands for.
type Credential struct {
	// SecretAccessKey verifies the signatures made with the key.
	SecretAccessKey string
	// SessionToken, when set, must be the request's X-Amz-Security-Token:
	// the key is a temporary one. A request with a token for a key
	// without one is refused.
	SessionToken string
	// Expires, when set, is when temporary credentials expire: a request
	// signed with them afterwards is refused with EXPIRED_TOKEN.
	Expires time.Time
	// PrincipalARN is the principal that signs with the key, as
	// requestContext.identity.userArn shows it: an IAM user
	// (arn:aws:iam::ACCOUNT:user/NAME), an assumed-role session
	// (arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION) or an account's
	// root user (arn:aws:iam::ACCOUNT:root).
	PrincipalARN string
}

// SigningName is the service name of an API Gateway signature.
const SigningName = "execute-api"

// MaxClockSkew is how far a signature's X-Amz-Date may be from the
// server's clock, either way, as AWS allows.
const MaxClockSkew = 5 * time.Minute

// DefaultRegion is the Region signatures are scoped to without
// Config.Region.
const DefaultRegion = "us-east-1"

// amzDateFormat is the ISO 8601 basic format of X-Amz-Date.
const amzDateFormat = "20060102T150405Z"

const sigv4Algorithm = "AWS4-HMAC-SHA256"

// signingKey is a known access key with the caller it authenticates.
type signingKey struct {
	cred   Credential
	caller Caller
}

// PrincipalCaller is the caller of a request signed with accessKeyID by the
// principal principalARN, with the ids API Gateway shows in
// requestContext.identity: for an IAM user, the user's id (the one
// NewCaller gives its name, so that a user is the same caller in both
// modes); for an assumed-role session, ROLEID:SESSION; for the root user,
// the account id.
func PrincipalCaller(principalARN, accessKeyID string) (Caller, error) {
	parts := strings.SplitN(principalARN, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[3] != "" || !validAccountID(parts[4]) {
		return Caller{}, fmt.Errorf("apigw: principal %q is not an IAM ARN of an account", principalARN)
	}
	service, account, resource := parts[2], parts[4], parts[5]
	switch {
	case service == "iam" && resource == "root":
		return Caller{Name: "root", UserID: account, AccessKeyID: accessKeyID, ARN: principalARN, AccountID: account}, nil
	case service == "iam" && strings.HasPrefix(resource, "user/"):
		name := resource[strings.LastIndex(resource, "/")+1:]
		if !validCallerName(name) {
			return Caller{}, fmt.Errorf("apigw: principal %q: %q is not an IAM user name", principalARN, name)
		}
		c := NewCaller(account, name)
		c.AccessKeyID, c.ARN = accessKeyID, principalARN
		return c, nil
	case service == "sts" && strings.HasPrefix(resource, "assumed-role/"):
		role, session, ok := strings.Cut(strings.TrimPrefix(resource, "assumed-role/"), "/")
		if !ok || !validCallerName(role) || session == "" || strings.Contains(session, "/") {
			return Caller{}, fmt.Errorf("apigw: principal %q is not an assumed-role session ARN", principalARN)
		}
		id := "AROA" + derivedID("role", account, role, 17) + ":" + session
		return Caller{Name: role + "/" + session, UserID: id, AccessKeyID: accessKeyID, ARN: principalARN, AccountID: account}, nil
	}
	return Caller{}, fmt.Errorf("apigw: principal %q is not an IAM user, an assumed-role session or a root user", principalARN)
}

func validAccountID(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// loadCredentials checks Config.Credentials and derives each key's caller.
func (s *Server) loadCredentials(creds map[string]Credential) error {
	s.keys = make(map[string]signingKey, len(creds))
	for id, cred := range creds {
		if id == "" || strings.ContainsAny(id, "/ ,=") {
			return fmt.Errorf("apigw: credentials: %q is not an access key id", id)
		}
		if cred.SecretAccessKey == "" {
			return fmt.Errorf("apigw: credentials: access key %s has no secret", id)
		}
		caller, err := PrincipalCaller(cred.PrincipalARN, id)
		if err != nil {
			return fmt.Errorf("apigw: credentials: access key %s: %w", id, err)
		}
		s.keys[id] = signingKey{cred: cred, caller: caller}
	}
	return nil
}

// API Gateway's answers to a request it cannot authenticate with IAM
// (AWS's "How do I troubleshoot HTTP 403 errors from API Gateway?"): the
// x-amzn-ErrorType and message of each, and the gateway response that
// renders it.
const (
	errIncompleteSignature = "IncompleteSignatureException"
	errInvalidSignature    = "InvalidSignatureException"
	errAccessDenied        = "AccessDeniedException"
	errExpiredToken        = "ExpiredTokenException"

	msgSignatureMismatch = "The request signature we calculated does not match the signature you provided. " +
		"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	msgInvalidToken = "The security token included in the request is invalid."
	msgExpiredToken = "The security token included in the request is expired"
)

var missingAuthToken = refusal{typ: respMissingAuthToken, status: http.StatusForbidden, errorType: "MissingAuthenticationTokenException", message: "Missing Authentication Token"}

// invalidSignature is a refusal of the signature: INVALID_SIGNATURE.
func invalidSignature(errorType, format string, args ...any) *refusal {
	return &refusal{typ: respInvalidSignature, status: http.StatusForbidden, errorType: errorType, message: fmt.Sprintf(format, args...)}
}

// verifySigV4 authenticates a request in SigV4 mode, as API Gateway does
// for a method with AWS_IAM authorization; body is the whole request
// body, whose SHA-256 the signature covers.
func (s *Server) verifySigV4(r *http.Request, body []byte) (Caller, *refusal) {
	values := r.Header.Values("Authorization")
	if len(values) == 0 {
		return Caller{}, &missingAuthToken
	}
	auth := strings.TrimSpace(strings.Join(values, ","))
	params, ok := strings.CutPrefix(auth, sigv4Algorithm+" ")
	if !ok || len(values) > 1 {
		return Caller{}, invalidSignature(errIncompleteSignature, "Authorization header requires '%s' algorithm, 'Credential', 'SignedHeaders' and 'Signature' parameters, once.", sigv4Algorithm)
	}
	fields := map[string]string{}
	for part := range strings.SplitSeq(params, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	var missing []string
	for _, k := range []string{"Credential", "Signature", "SignedHeaders"} {
		if fields[k] == "" {
			missing = append(missing, fmt.Sprintf("Authorization header requires '%s' parameter.", k))
		}
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if amzDate == "" {
		missing = append(missing, "Authorization header requires existence of a 'X-Amz-Date' header.")
	}
	if len(missing) > 0 {
		return Caller{}, invalidSignature(errIncompleteSignature, "%s", strings.Join(missing, " "))
	}
	signedAt, err := time.Parse(amzDateFormat, amzDate)
	if err != nil {
		return Caller{}, invalidSignature(errIncompleteSignature, "Date must be in ISO-8601 'basic format'. Got '%s'.", amzDate)
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 {
		return Caller{}, invalidSignature(errIncompleteSignature, "Credential '%s' is not ACCESS_KEY_ID/DATE/REGION/SERVICE/aws4_request.", fields["Credential"])
	}
	keyID, date, region, service, terminator := scope[0], scope[1], scope[2], scope[3], scope[4]
	switch {
	case terminator != "aws4_request":
		return Caller{}, invalidSignature(errInvalidSignature, "Credential should be scoped with a valid terminator: 'aws4_request', not '%s'.", terminator)
	case service != SigningName:
		return Caller{}, invalidSignature(errInvalidSignature, "Credential should be scoped to correct service: '%s'.", SigningName)
	case region != s.cfg.Region:
		return Caller{}, invalidSignature(errInvalidSignature, "Credential should be scoped to a valid region, not '%s'.", region)
	case date != signedAt.Format("20060102"):
		return Caller{}, invalidSignature(errInvalidSignature, "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '%s' != '%s', from '%s'.",
			date, signedAt.Format("20060102"), amzDate)
	}
	now := s.cfg.Now().UTC()
	switch {
	case signedAt.Before(now.Add(-MaxClockSkew)):
		return Caller{}, invalidSignature(errInvalidSignature, "Signature expired: %s is now earlier than %s (%s - 5 min.)",
			amzDate, now.Add(-MaxClockSkew).Format(amzDateFormat), now.Format(amzDateFormat))
	case signedAt.After(now.Add(MaxClockSkew)):
		return Caller{}, invalidSignature(errInvalidSignature, "Signature not yet current: %s is still later than %s (%s + 5 min.)",
			amzDate, now.Add(MaxClockSkew).Format(amzDateFormat), now.Format(amzDateFormat))
	}
	key, ok := s.keys[keyID]
	tokens := r.Header.Values("X-Amz-Security-Token")
	if !ok || len(tokens) > 1 || !sameToken(tokens, key.cred.SessionToken) {
		return Caller{}, &refusal{typ: respAccessDenied, status: http.StatusForbidden, errorType: errAccessDenied, message: msgInvalidToken}
	}
	if !key.cred.Expires.IsZero() && !now.Before(key.cred.Expires) {
		return Caller{}, &refusal{typ: respExpiredToken, status: http.StatusForbidden, errorType: errExpiredToken, message: msgExpiredToken}
	}
	want, err := resign(r, body, fields["SignedHeaders"], aws.Credentials{AccessKeyID: keyID, SecretAccessKey: key.cred.SecretAccessKey}, s.cfg.Region, signedAt)
	if err != nil {
		s.log.Warn("recomputing a signature", "error", err)
		return Caller{}, invalidSignature(errInvalidSignature, "%s", msgSignatureMismatch)
	}
	if want.signedHeaders != fields["SignedHeaders"] || subtle.ConstantTimeCompare([]byte(want.signature), []byte(fields["Signature"])) != 1 {
		s.log.Debug("signature mismatch", "signedHeaders", fields["SignedHeaders"], "recomputedSignedHeaders", want.signedHeaders)
		return Caller{}, invalidSignature(errInvalidSignature, "%s", msgSignatureMismatch)
	}
	return key.caller, nil
}

// sameToken reports whether the request's X-Amz-Security-Token values are
// the key's session token: none for a key without one.
func sameToken(sent []string, want string) bool {
	if want == "" {
		return len(sent) == 0
	}
	return len(sent) == 1 && subtle.ConstantTimeCompare([]byte(sent[0]), []byte(want)) == 1
}

// signature is a recomputed signature and the headers it covers.
type signature struct {
	signedHeaders string
	signature     string
}

// resign signs, with the SDK's signer, a request made of r's method, path,
// query and the headers r's signature names, at the time it was signed,
// over body's SHA-256. The signer always signs host and x-amz-date (and
// content-length when the body is not empty), and never the headers it
// ignores (User-Agent, X-Amzn-Trace-Id, Expect, Transfer-Encoding): a
// signature over another set does not match.
func resign(r *http.Request, body []byte, signedHeaders string, creds aws.Credentials, region string, at time.Time) (signature, error) {
	u := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	req := &http.Request{Method: r.Method, URL: u, Host: r.Host, Header: http.Header{}, Body: http.NoBody}
	names := strings.Split(signedHeaders, ";")
	for _, name := range names {
		switch name {
		case "host", "x-amz-date":
			// The signer signs both: the host from req.Host, the date
			// from at.
		case "content-length":
			req.ContentLength = int64(len(body))
		default:
			if vs := r.Header.Values(name); len(vs) > 0 {
				req.Header[http.CanonicalHeaderKey(name)] = slices.Clone(vs)
			}
		}
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableSessionToken = true })
	if err := signer.SignHTTP(context.Background(), creds, req, payloadHash(body), SigningName, region, at); err != nil {
		return signature{}, err
	}
	auth, ok := strings.CutPrefix(req.Header.Get("Authorization"), sigv4Algorithm+" ")
	if !ok {
		return signature{}, errors.New("the signer wrote no SigV4 Authorization header")
	}
	var out signature
	for part := range strings.SplitSeq(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "SignedHeaders":
			out.signedHeaders = v
		case "Signature":
			out.signature = v
		}
	}
	return out, nil
}

// payloadHash is the hex SHA-256 of a body, as a signature covers it.
func payloadHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}
