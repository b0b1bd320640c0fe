package apigw

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// requestEvent is the Lambda proxy integration event of a REST API (payload
// format 1.0) with the exact keys and nulls API Gateway sends; handlers
// decode it as events.APIGatewayProxyRequest.
type requestEvent struct {
	Resource                        string              `json:"resource"`
	Path                            string              `json:"path"`
	HTTPMethod                      string              `json:"httpMethod"`
	Headers                         map[string]string   `json:"headers"`
	MultiValueHeaders               map[string][]string `json:"multiValueHeaders"`
	QueryStringParameters           map[string]string   `json:"queryStringParameters"`
	MultiValueQueryStringParameters map[string][]string `json:"multiValueQueryStringParameters"`
	PathParameters                  map[string]string   `json:"pathParameters"`
	StageVariables                  map[string]string   `json:"stageVariables"`
	RequestContext                  requestContext      `json:"requestContext"`
	Body                            *string             `json:"body"`
	IsBase64Encoded                 bool                `json:"isBase64Encoded"`
}

type requestContext struct {
	ResourceID        string   `json:"resourceId"`
	ResourcePath      string   `json:"resourcePath"`
	HTTPMethod        string   `json:"httpMethod"`
	ExtendedRequestID string   `json:"extendedRequestId"`
	RequestTime       string   `json:"requestTime"`
	Path              string   `json:"path"`
	AccountID         string   `json:"accountId"`
	Protocol          string   `json:"protocol"`
	Stage             string   `json:"stage"`
	DomainPrefix      string   `json:"domainPrefix"`
	RequestTimeEpoch  int64    `json:"requestTimeEpoch"`
	RequestID         string   `json:"requestId"`
	Identity          identity `json:"identity"`
	DomainName        string   `json:"domainName"`
	APIID             string   `json:"apiId"`
}

// identity is requestContext.identity of an AWS_IAM-authorized request: the
// IAM fields are set, the Cognito and API key ones null.
type identity struct {
	CognitoIdentityPoolID         *string `json:"cognitoIdentityPoolId"`
	AccountID                     string  `json:"accountId"`
	CognitoIdentityID             *string `json:"cognitoIdentityId"`
	Caller                        string  `json:"caller"`
	SourceIP                      string  `json:"sourceIp"`
	PrincipalOrgID                *string `json:"principalOrgId"`
	AccessKey                     string  `json:"accessKey"`
	CognitoAuthenticationType     *string `json:"cognitoAuthenticationType"`
	CognitoAuthenticationProvider *string `json:"cognitoAuthenticationProvider"`
	UserArn                       string  `json:"userArn"`
	UserAgent                     string  `json:"userAgent"`
	User                          string  `json:"user"`
}

// Caller is the IAM principal a request is made as.
type Caller struct {
	// Name is the IAM user name (ROLE/SESSION for an assumed role, root
	// for the root user).
	Name string
	// UserID is the IAM unique id ("AIDA..." for a user,
	// "AROA...:SESSION" for an assumed role), identity.user and
	// identity.caller.
	UserID string
	// AccessKeyID is the access key id ("AKIA..."), identity.accessKey.
	AccessKeyID string
	// ARN is arn:aws:iam::<account>:user/<Name> for a user,
	// identity.userArn.
	ARN string
	// AccountID is the principal's account, identity.accountId.
	AccountID string
}

// NewCaller returns the caller of a user name in an account. The ids are
// derived from both, so they are the same on every run.
func NewCaller(accountID, name string) Caller {
	return Caller{
		Name:        name,
		UserID:      "AIDA" + derivedID("user", accountID, name, 17),
		AccessKeyID: "AKIA" + derivedID("key", accountID, name, 16),
		ARN:         "arn:aws:iam::" + accountID + ":user/" + name,
		AccountID:   accountID,
	}
}

func derivedID(kind, accountID, name string, n int) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + accountID + "\x00" + name))
	return base32.StdEncoding.EncodeToString(sum[:])[:n]
}

// validCallerName reports whether name is an IAM user name: 1-64
// characters of [A-Za-z0-9+=,.@_-].
func validCallerName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for _, c := range name {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.ContainsRune("+=,.@_-", c):
		default:
			return false
		}
	}
	return true
}

// headerMaps returns the headers and multiValueHeaders of a request, with
// Host and the X-Forwarded-* headers API Gateway adds.
func headerMaps(r *http.Request, sourceIP string) (map[string]string, map[string][]string) {
	multi := make(map[string][]string, len(r.Header)+4)
	for k, vs := range r.Header {
		multi[k] = append([]string(nil), vs...)
	}
	if r.Host != "" {
		multi["Host"] = []string{r.Host}
	}
	if prior := r.Header.Values("X-Forwarded-For"); len(prior) > 0 {
		multi["X-Forwarded-For"] = []string{strings.Join(prior, ", ") + ", " + sourceIP}
	} else {
		multi["X-Forwarded-For"] = []string{sourceIP}
	}
	proto, port := "http", "80"
	if r.TLS != nil {
		proto, port = "https", "443"
	}
	if _, p, err := net.SplitHostPort(r.Host); err == nil && p != "" {
		port = p
	}
	multi["X-Forwarded-Proto"] = []string{proto}
	multi["X-Forwarded-Port"] = []string{port}
	single := make(map[string]string, len(multi))
	for k, vs := range multi {
		if len(vs) > 0 {
			single[k] = vs[len(vs)-1]
		}
	}
	return single, multi
}

// queryMaps returns queryStringParameters and
// multiValueQueryStringParameters, both nil (null) without a query.
func queryMaps(rawQuery string) (map[string]string, map[string][]string) {
	values, _ := url.ParseQuery(rawQuery) // keeps what parses, as API Gateway is lenient
	if len(values) == 0 {
		return nil, nil
	}
	single := make(map[string]string, len(values))
	for k, vs := range values {
		single[k] = vs[len(vs)-1]
	}
	return single, map[string][]string(values)
}

// isBinary reports whether a Content-Type matches one of the binary media
// types (exact, "type/*" or "*/*").
func isBinary(contentType string, binaryTypes []string) bool {
	if len(binaryTypes) == 0 {
		return false
	}
	mt := ""
	if contentType != "" {
		if parsed, _, err := mime.ParseMediaType(contentType); err == nil {
			mt = parsed
		} else {
			mt = strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
		}
	}
	for _, bt := range binaryTypes {
		switch {
		case bt == "*/*":
			return true
		case mt == "":
		case bt == mt:
			return true
		case strings.HasSuffix(bt, "/*") && strings.HasPrefix(mt, bt[:len(bt)-1]):
			return true
		}
	}
	return false
}

// eventBody is the body of the event: null when empty, base64 for binary
// media types, text otherwise (invalid UTF-8 replaced, as API Gateway does
// for text bodies).
func eventBody(body []byte, binary bool) (*string, bool) {
	if len(body) == 0 {
		return nil, false
	}
	if binary {
		s := base64.StdEncoding.EncodeToString(body)
		return &s, true
	}
	s := string(body)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return &s, false
}

func sourceIPOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// domainPrefix is the first label of the host name.
func domainPrefix(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	prefix, _, _ := strings.Cut(host, ".")
	return prefix
}

// resourceID is a stable 6-character id for a resource path, the form of
// API Gateway resource ids.
func resourceID(apiID, path string) string {
	sum := sha256.Sum256([]byte(apiID + "\x00" + path))
	return strings.ToLower(base32.StdEncoding.EncodeToString(sum[:]))[:6]
}

// extendedRequestID is a random id of the form API Gateway uses
// ("TWegAcC4EowCHnA=").
func extendedRequestID() string {
	var b [11]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.StdEncoding.EncodeToString(b[:])
}

// requestTime formats requestContext.requestTime.
func requestTime(t time.Time) string {
	return t.UTC().Format("02/Jan/2006:15:04:05 +0000")
}

// traceID is an X-Ray trace id (Root=1-<8 hex digits of time>-<24 hex>).
func traceID(t time.Time) string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return fmt.Sprintf("Root=1-%08x-%s", uint32(t.Unix()), hex.EncodeToString(b[:]))
}
