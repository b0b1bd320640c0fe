package lambdarun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

var (
	// ErrFunctionNotFound is matched (errors.Is) by the error of a look-up
	// or invocation of a function that is not registered, Lambda's
	// ResourceNotFoundException.
	ErrFunctionNotFound = errors.New("lambdarun: function not found")
	// ErrDuplicateFunction reports a second registration of a name or ARN.
	ErrDuplicateFunction = errors.New("lambdarun: function already registered")
)

// NotFoundError is the error of a reference that names no registered
// function. It matches ErrFunctionNotFound.
type NotFoundError struct {
	// Ref is the name or ARN as given.
	Ref string
}

func (e *NotFoundError) Error() string {
	return "lambdarun: function not found: " + e.Ref
}

// Is reports whether target is ErrFunctionNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrFunctionNotFound }

// Registry holds the functions of the local stack and invokes them by any
// reference the Lambda Invoke API accepts: the function name, the full ARN or
// the partial ARN (<account>:function:<name>), each optionally followed by
// :<qualifier>. Qualifiers ($LATEST, a version or an alias) all select the
// one registered code. The zero Registry is ready to use and safe for
// concurrent use.
type Registry struct {
	mu          sync.RWMutex
	byName      map[string]*Function
	byARN       map[string]*Function
	interceptor Interceptor
}

// Invoke runs one invocation of a function: the normal path of
// Registry.InvokeFunction, with the function's environments and timeout.
type Invoke func(ctx context.Context, payload []byte) ([]byte, *FunctionError, error)

// Interceptor wraps every invocation made through a Registry. function is
// the registered name of the function invoked (whatever reference the
// caller used); next runs the invocation. An interceptor may answer without
// calling next, call it with another context (context.WithoutCancel for a
// run that must outlive its caller) or call it later in the background.
// Tests use it to inject faults; it is nil in normal operation.
type Interceptor func(ctx context.Context, function string, payload []byte, next Invoke) ([]byte, *FunctionError, error)

// SetInterceptor installs ic for every later invocation; nil removes it.
func (r *Registry) SetInterceptor(ic Interceptor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.interceptor = ic
}

// ServiceError is a failure of the Lambda service itself rather than of the
// function, as the Invoke API reports it: Type names the exception with the
// "Lambda." prefix Step Functions uses (Lambda.ServiceException,
// Lambda.TooManyRequestsException, ...).
type ServiceError struct {
	Type    string
	Message string
}

func (e *ServiceError) Error() string { return e.Type + ": " + e.Message }

// Register adds functions. It fails, registering none of them, when one is
// invalid or its name or ARN is already registered.
func (r *Registry) Register(fns ...*Function) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = make(map[string]*Function)
		r.byARN = make(map[string]*Function)
	}
	names := make(map[string]bool, len(fns))
	arns := make(map[string]bool, len(fns))
	for _, f := range fns {
		if f == nil {
			return fmt.Errorf("%w: nil function", ErrInvalidFunction)
		}
		if err := f.validate(); err != nil {
			return err
		}
		arn := f.EffectiveARN()
		if _, dup := r.byName[f.Name]; dup || names[f.Name] {
			return fmt.Errorf("%w: name %s", ErrDuplicateFunction, f.Name)
		}
		if _, dup := r.byARN[arn]; dup || arns[arn] {
			return fmt.Errorf("%w: ARN %s", ErrDuplicateFunction, arn)
		}
		names[f.Name], arns[arn] = true, true
	}
	for _, f := range fns {
		r.byName[f.Name] = f
		r.byARN[f.EffectiveARN()] = f
	}
	return nil
}

// Lookup returns the function a reference names, or a *NotFoundError.
func (r *Registry) Lookup(ref string) (*Function, error) {
	f, _, err := r.lookup(ref)
	return f, err
}

// InvokeFunction invokes the function functionName refers to; see
// Function.Invoke. The handler's LambdaContext.InvokedFunctionArn is the
// function ARN, with the qualifier when the reference had one, as Lambda
// sets it.
func (r *Registry) InvokeFunction(ctx context.Context, functionName string, payload []byte) ([]byte, *FunctionError, error) {
	f, qualifier, err := r.lookup(functionName)
	if err != nil {
		return nil, nil, err
	}
	arn := f.EffectiveARN()
	if qualifier != "" {
		arn += ":" + qualifier
	}
	r.mu.RLock()
	ic := r.interceptor
	r.mu.RUnlock()
	if ic == nil {
		return f.invoke(ctx, payload, arn)
	}
	ctx = context.WithValue(ctx, timeoutKey{}, f.timeout())
	return ic(ctx, f.Name, payload, func(ctx context.Context, payload []byte) ([]byte, *FunctionError, error) {
		return f.invoke(ctx, payload, arn)
	})
}

type timeoutKey struct{}

// FunctionTimeout is the timeout of the function an interceptor is called
// for: Lambda ends any invocation at it, whatever its handler does.
func FunctionTimeout(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(timeoutKey{}).(time.Duration)
	return d, ok
}

// TimeoutError is the function error Lambda reports for an invocation
// that ran past the function timeout.
func TimeoutError(timeout time.Duration) *FunctionError {
	return timeoutError(time.Now(), NewRequestID(), timeout)
}

func (r *Registry) lookup(ref string) (*Function, string, error) {
	notFound := &NotFoundError{Ref: ref}
	parsed, ok := parseRef(ref)
	if !ok {
		return nil, "", notFound
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var f *Function
	switch {
	case parsed.arn != "":
		f = r.byARN[parsed.arn]
	default:
		f = r.byName[parsed.name]
		if f != nil && parsed.account != "" && accountOf(f.EffectiveARN()) != parsed.account {
			f = nil
		}
	}
	if f == nil {
		return nil, "", notFound
	}
	return f, parsed.qualifier, nil
}

// functionRef is a parsed function reference.
type functionRef struct {
	arn       string // unqualified ARN, for full ARNs
	account   string // for partial ARNs
	name      string
	qualifier string
}

// parseRef parses "name", "name:q", "account:function:name[:q]" and
// "arn:partition:lambda:region:account:function:name[:q]".
func parseRef(ref string) (functionRef, bool) {
	if strings.HasPrefix(ref, "arn:") {
		return parseARN(ref)
	}
	parts := strings.Split(ref, ":")
	var r functionRef
	switch {
	case len(parts) <= 2:
		r.name = parts[0]
		if len(parts) == 2 {
			r.qualifier = parts[1]
			if r.qualifier == "" {
				return r, false
			}
		}
	case (len(parts) == 3 || len(parts) == 4) && parts[1] == "function":
		r.account, r.name = parts[0], parts[2]
		if len(parts) == 4 {
			r.qualifier = parts[3]
			if r.qualifier == "" {
				return r, false
			}
		}
	default:
		return r, false
	}
	return r, validFunctionName(r.name) && validQualifier(r.qualifier)
}

// parseARN parses arn:partition:lambda:region:account:function:name[:q].
func parseARN(arn string) (functionRef, bool) {
	parts := strings.Split(arn, ":")
	if (len(parts) != 7 && len(parts) != 8) || parts[0] != "arn" || parts[1] == "" ||
		parts[2] != "lambda" || parts[3] == "" || parts[4] == "" || parts[5] != "function" {
		return functionRef{}, false
	}
	r := functionRef{arn: strings.Join(parts[:7], ":"), account: parts[4], name: parts[6]}
	if len(parts) == 8 {
		r.qualifier = parts[7]
		if r.qualifier == "" {
			return r, false
		}
	}
	return r, validFunctionName(r.name) && validQualifier(r.qualifier)
}

func accountOf(arn string) string {
	parts := strings.Split(arn, ":")
	if len(parts) < 5 {
		return ""
	}
	return parts[4]
}

func validFunctionName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !isAlnum(c) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// validQualifier accepts "" (none), $LATEST, versions and alias names.
func validQualifier(s string) bool {
	if s == "" || s == "$LATEST" {
		return true
	}
	if len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !isAlnum(c) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

func isAlnum(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
