// Package spec reads the API's OpenAPI document (api/openapi.yaml): its
// routes, the responses each operation may give, the request validation
// and the gateway responses declared in its x-amazon-apigateway-*
// extensions. The local API Gateway serves from it, and the tests check
// every response against it.
package spec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// ErrNoRoute reports a method and path the document does not declare.
var ErrNoRoute = errors.New("spec: no such route")

// Spec is a loaded, validated OpenAPI document.
type Spec struct {
	doc    *openapi3.T
	routes []*Route
}

// Route is one operation of the document.
type Route struct {
	// Method is upper case; Path the path template, such as
	// /transfers/{transferId}.
	Method    string
	Path      string
	Operation *openapi3.Operation
	pathItem  *openapi3.PathItem
	segments  []string
}

// Load parses and validates an OpenAPI 3.0 document (YAML or JSON).
func Load(data []byte) (*Spec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	s := &Spec{doc: doc}
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			s.routes = append(s.routes, &Route{
				Method: strings.ToUpper(method), Path: path, Operation: op, pathItem: item,
				segments: splitPath(path),
			})
		}
	}
	slices.SortFunc(s.routes, func(a, b *Route) int {
		return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method)
	})
	return s, nil
}

// LoadFile loads a document from a file.
func LoadFile(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	return Load(data)
}

var (
	sourceOnce sync.Once
	source     *Spec
	sourceErr  error
)

// SourceFile is the path of api/openapi.yaml in the source tree this
// package was built from.
func SourceFile() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "api", "openapi.yaml")
}

// Source returns the document at SourceFile, loaded once.
func Source() (*Spec, error) {
	sourceOnce.Do(func() { source, sourceErr = LoadFile(SourceFile()) })
	return source, sourceErr
}

// Doc returns the parsed document.
func (s *Spec) Doc() *openapi3.T { return s.doc }

// Routes returns the operations, ordered by path and method.
func (s *Spec) Routes() []*Route { return s.routes }

// Extension returns a top-level x- extension of the document.
func (s *Spec) Extension(name string) (any, bool) {
	v, ok := s.doc.Extensions[name]
	return v, ok
}

// Find returns the operation for a method and a path, which is either a
// path template of the document or a concrete path (escaped segments
// matched against the templates, literal segments first).
func (s *Spec) Find(method, path string) (*Route, error) {
	method = strings.ToUpper(method)
	segs := splitPath(path)
	var best *Route
	bestRank := -1
	for _, r := range s.routes {
		if r.Method != method || len(r.segments) != len(segs) {
			continue
		}
		if r.Path == path {
			return r, nil
		}
		rank, ok := r.match(segs)
		if ok && rank > bestRank {
			best, bestRank = r, rank
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: %s %s", ErrNoRoute, method, path)
	}
	return best, nil
}

// match reports whether the concrete segments match the template, and
// how many literal segments matched.
func (r *Route) match(segs []string) (int, bool) {
	literals := 0
	for i, t := range r.segments {
		if strings.HasPrefix(t, "{") {
			if segs[i] == "" {
				return 0, false
			}
			continue
		}
		if segs[i] != t {
			return 0, false
		}
		literals++
	}
	return literals, true
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// CheckResponse validates a response against the document: its status
// must be declared for the operation (or covered by default), its headers
// must match the declared ones (required headers present), and its body
// must be of a declared media type and match its schema. A response to a
// method and path the document does not declare must be a problem
// document.
func (s *Spec) CheckResponse(method, path string, status int, header http.Header, body []byte) error {
	route, err := s.Find(method, path)
	if errors.Is(err, ErrNoRoute) {
		return s.checkProblem(status, header, body)
	}
	req, _ := http.NewRequest(route.Method, "http://localhost"+path, nil) // an absolute URL always parses
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req,
			Route: &routers.Route{
				Spec: s.doc, Path: route.Path, PathItem: route.pathItem, Method: route.Method, Operation: route.Operation,
			},
		},
		Status:  status,
		Header:  header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		return fmt.Errorf("%s %s -> %d: %w", route.Method, path, status, err)
	}
	return nil
}

// checkProblem validates a response outside the declared routes: it must
// be a Problem.
func (s *Spec) checkProblem(status int, header http.Header, body []byte) error {
	mt, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil || mt != "application/problem+json" {
		return fmt.Errorf("status %d: Content-Type %q, want application/problem+json", status, header.Get("Content-Type"))
	}
	ref := s.doc.Components.Schemas["Problem"]
	if ref == nil {
		return errors.New("spec: no Problem schema")
	}
	var v any
	if err := decodeJSON(body, &v); err != nil {
		return fmt.Errorf("status %d: body is not JSON: %w", status, err)
	}
	if err := ref.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("status %d: body does not match Problem: %w", status, err)
	}
	return nil
}

func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}

// Gateway response types of the request validation.
const (
	BadRequestParameters = "BAD_REQUEST_PARAMETERS"
	BadRequestBody       = "BAD_REQUEST_BODY"
)

// RequestError is a request API Gateway's request validator refuses.
type RequestError struct {
	// ResponseType is BadRequestParameters or BadRequestBody.
	ResponseType string
	// Message is $context.error.message; Validation is
	// $context.error.validationErrorString.
	Message    string
	Validation string
}

func (e *RequestError) Error() string { return e.Message + ": " + e.Validation }

type validator struct {
	Body       bool `json:"validateRequestBody"`
	Parameters bool `json:"validateRequestParameters"`
}

// validatorOf returns the request validator of an operation: its own
// x-amazon-apigateway-request-validator, else the document's.
func (s *Spec) validatorOf(r *Route) validator {
	name, _ := r.Operation.Extensions["x-amazon-apigateway-request-validator"].(string)
	if name == "" {
		name, _ = s.doc.Extensions["x-amazon-apigateway-request-validator"].(string)
	}
	all, _ := s.doc.Extensions["x-amazon-apigateway-request-validators"].(map[string]any)
	v, _ := all[name].(map[string]any)
	var out validator
	out.Body, _ = v["validateRequestBody"].(bool)
	out.Parameters, _ = v["validateRequestParameters"].(bool)
	return out
}

// ValidateRequest checks a request as API Gateway's request validator
// does: the required header and query string parameters are present, and
// a body whose media type has a schema (no Content-Type counts as
// application/json) is JSON that matches it. Bodies of other media types
// are not checked, and parameter values are not checked against their
// schemas.
func (s *Spec) ValidateRequest(r *Route, header http.Header, query map[string][]string, body []byte) *RequestError {
	v := s.validatorOf(r)
	if v.Parameters {
		var missing []string
		params := append(openapi3.Parameters(nil), r.pathItem.Parameters...)
		params = append(params, r.Operation.Parameters...)
		for _, ref := range params {
			p := ref.Value
			if p == nil || !p.Required {
				continue
			}
			switch p.In {
			case openapi3.ParameterInHeader:
				if _, ok := header[http.CanonicalHeaderKey(p.Name)]; !ok {
					missing = append(missing, p.Name)
				}
			case openapi3.ParameterInQuery:
				if _, ok := query[p.Name]; !ok {
					missing = append(missing, p.Name)
				}
			}
		}
		if len(missing) > 0 {
			list := "[" + strings.Join(missing, ", ") + "]"
			return &RequestError{ResponseType: BadRequestParameters,
				Message: "Missing required request parameters: " + list, Validation: "Missing required request parameters: " + list}
		}
	}
	if !v.Body || r.Operation.RequestBody == nil || r.Operation.RequestBody.Value == nil {
		return nil
	}
	mt := "application/json"
	if ct := header.Get("Content-Type"); ct != "" {
		parsed, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return nil
		}
		mt = parsed
	}
	media := r.Operation.RequestBody.Value.Content[mt]
	if media == nil || media.Schema == nil || media.Schema.Value == nil {
		return nil
	}
	var value any
	if err := decodeJSON(body, &value); err != nil {
		return &RequestError{ResponseType: BadRequestBody, Message: "Invalid request body", Validation: "[Invalid request body: " + err.Error() + "]"}
	}
	if err := media.Schema.Value.VisitJSON(value); err != nil {
		var se *openapi3.SchemaError
		reason := err.Error()
		if errors.As(err, &se) {
			reason = se.Reason
		}
		return &RequestError{ResponseType: BadRequestBody, Message: "Invalid request body", Validation: "[" + reason + "]"}
	}
	return nil
}
