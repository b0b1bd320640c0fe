// Package eventbus is a local Amazon EventBridge event bus: rules with event
// patterns, asynchronous at-least-once delivery to targets with EventBridge's
// retry policy and dead-letter hand-off, and rate() schedules.
package eventbus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"regexp"
	"strconv"
	"sync"
	"time"
)

const (
	// DefaultMaximumRetryAttempts and DefaultMaximumEventAgeInSeconds are
	// EventBridge's default target retry policy.
	DefaultMaximumRetryAttempts     = 185
	DefaultMaximumEventAgeInSeconds = 86400

	// NoRetries as RetryPolicy.MaximumRetryAttempts disables retries (AWS's
	// MaximumRetryAttempts 0; a zero field means the default).
	NoRetries = -1

	minEventAgeInSeconds = 60

	// Retry backoff: exponential from backoffBase, capped at backoffCap,
	// with jitter, in bus time (see Config.TimeScale).
	backoffBase = time.Second
	backoffCap  = 3 * time.Minute
)

var (
	// ErrInvalidEvent reports a published event that is not a JSON object.
	ErrInvalidEvent = errors.New("eventbus: invalid event")
	// ErrInvalidRule reports a rule or schedule that cannot be added.
	ErrInvalidRule = errors.New("eventbus: invalid rule")
	// ErrDuplicateRule reports a rule name already in use on the bus.
	ErrDuplicateRule = errors.New("eventbus: rule already exists")
	// ErrUnsupportedSchedule reports a schedule expression the local bus does
	// not run (cron expressions).
	ErrUnsupportedSchedule = errors.New("eventbus: schedule expression not supported")
	// ErrClosed reports use of a closed bus.
	ErrClosed = errors.New("eventbus: bus closed")
	// ErrRetriesExhausted and ErrEventTooOld are the reasons a
	// *DeliveryError hands an event to the dead letter.
	ErrRetriesExhausted = errors.New("eventbus: retry attempts exhausted")
	ErrEventTooOld      = errors.New("eventbus: maximum event age exceeded")
)

// Target receives the events of a rule. Deliver is called at least once per
// matching event, possibly concurrently; an error or a panic makes the bus
// retry.
type Target interface {
	Deliver(ctx context.Context, event []byte) error
}

// TargetFunc adapts a function to Target.
type TargetFunc func(ctx context.Context, event []byte) error

// Deliver calls f.
func (f TargetFunc) Deliver(ctx context.Context, event []byte) error { return f(ctx, event) }

// RetryPolicy is a target's retry policy. Zero fields take the EventBridge
// defaults (185 attempts, 86400 s); NoRetries disables retries.
type RetryPolicy struct {
	// MaximumRetryAttempts is 0-185, or NoRetries.
	MaximumRetryAttempts int
	// MaximumEventAgeInSeconds is 60-86400: no retry starts after the event
	// has waited that long (in bus time) since it was published.
	MaximumEventAgeInSeconds int
}

func (p RetryPolicy) effective() (retries int, maxAge time.Duration, err error) {
	retries, age := p.MaximumRetryAttempts, p.MaximumEventAgeInSeconds
	switch {
	case retries == 0:
		retries = DefaultMaximumRetryAttempts
	case retries == NoRetries:
		retries = 0
	case retries < 0 || retries > DefaultMaximumRetryAttempts:
		return 0, 0, fmt.Errorf("MaximumRetryAttempts %d is outside 0-%d", retries, DefaultMaximumRetryAttempts)
	}
	if age == 0 {
		age = DefaultMaximumEventAgeInSeconds
	}
	if age < minEventAgeInSeconds || age > DefaultMaximumEventAgeInSeconds {
		return 0, 0, fmt.Errorf("MaximumEventAgeInSeconds %d is outside %d-%d", age, minEventAgeInSeconds, DefaultMaximumEventAgeInSeconds)
	}
	return retries, time.Duration(age) * time.Second, nil
}

// Rule routes the events matching Pattern to Target.
type Rule struct {
	// Name is 1-64 characters of [.-_A-Za-z0-9], unique on the bus.
	Name        string
	Pattern     *Pattern
	Target      Target
	RetryPolicy RetryPolicy
	// DeadLetter receives an event whose delivery failed for good, with a
	// *DeliveryError. Nil logs the loss.
	DeadLetter func(ctx context.Context, event []byte, err error)
}

// DeliveryError is why an event went to the dead letter. It matches (errors.Is)
// its reason, ErrRetriesExhausted or ErrEventTooOld, and the last error of
// the target.
type DeliveryError struct {
	Rule     string
	Attempts int
	Reason   error
	Last     error
}

func (e *DeliveryError) Error() string {
	return fmt.Sprintf("eventbus: rule %s: %v after %d attempts: %v", e.Rule, e.Reason, e.Attempts, e.Last)
}

// Unwrap returns the reason and the last target error.
func (e *DeliveryError) Unwrap() []error { return []error{e.Reason, e.Last} }

// Config configures a Bus. Zero fields take the defaults shown.
type Config struct {
	// Name is the event bus name ("default").
	Name string
	// Region ("us-east-1") and AccountID ("123456789012") go into rule ARNs
	// and scheduled events.
	Region    string
	AccountID string
	// TimeScale multiplies every wait of the bus: retry backoff and schedule
	// intervals. 0 means 1. Tests use a small scale so they never wait for
	// the real intervals; event age is kept in bus time, so retry policies
	// behave the same at any scale.
	TimeScale float64
	// Now is the clock for the time of scheduled events (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// FirstScheduleAfter, when positive, is when a schedule delivers its
	// first event after it was added (scaled like the intervals); then it
	// follows its rate. 0: one interval after, as EventBridge may. A
	// runtime restarted with persistent data uses it to sweep soon.
	FirstScheduleAfter time.Duration
}

// Bus is a local event bus. It is safe for concurrent use.
type Bus struct {
	cfg Config
	log *slog.Logger

	mu       sync.RWMutex
	closed   bool
	rules    []*rule
	names    map[string]bool
	inflight tracker

	ctx    context.Context // ends when the bus is closed
	cancel context.CancelFunc

	schedCtx    context.Context
	schedCancel context.CancelFunc
	schedules   sync.WaitGroup
}

type rule struct {
	Rule
	retries int
	maxAge  time.Duration
}

// New returns a running bus.
func New(cfg Config) *Bus {
	if cfg.Name == "" {
		cfg.Name = "default"
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.AccountID == "" {
		cfg.AccountID = "123456789012"
	}
	if cfg.TimeScale <= 0 {
		cfg.TimeScale = 1
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	b := &Bus{cfg: cfg, log: log.With("eventBus", cfg.Name), names: make(map[string]bool)}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.schedCtx, b.schedCancel = context.WithCancel(b.ctx)
	return b
}

var ruleNameRE = regexp.MustCompile(`^[.\-_A-Za-z0-9]{1,64}$`)

// RuleARN returns the ARN of a rule of this bus.
func (b *Bus) RuleARN(name string) string {
	prefix := "arn:aws:events:" + b.cfg.Region + ":" + b.cfg.AccountID + ":rule/"
	if b.cfg.Name != "default" {
		prefix += b.cfg.Name + "/"
	}
	return prefix + name
}

// AddRule adds a rule; events published from then on are matched against it.
func (b *Bus) AddRule(r Rule) error {
	if r.Pattern == nil {
		return fmt.Errorf("%w: rule %q has no pattern", ErrInvalidRule, r.Name)
	}
	return b.addRule(r)
}

func (b *Bus) addRule(r Rule) error {
	if !ruleNameRE.MatchString(r.Name) {
		return fmt.Errorf("%w: name %q must be 1-64 characters of [.-_A-Za-z0-9]", ErrInvalidRule, r.Name)
	}
	if r.Target == nil {
		return fmt.Errorf("%w: rule %s has no target", ErrInvalidRule, r.Name)
	}
	retries, maxAge, err := r.RetryPolicy.effective()
	if err != nil {
		return fmt.Errorf("%w: rule %s: %w", ErrInvalidRule, r.Name, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if b.names[r.Name] {
		return fmt.Errorf("%w: %s", ErrDuplicateRule, r.Name)
	}
	b.names[r.Name] = true
	if r.Pattern != nil {
		b.rules = append(b.rules, &rule{Rule: r, retries: retries, maxAge: maxAge})
	}
	return nil
}

// Publish puts an event, a JSON object in the EventBridge envelope
// (source, detail-type, detail, ...), on the bus. It returns once the event
// is matched; deliveries to the targets of matching rules run in the
// background (see Drain).
func (b *Bus) Publish(ctx context.Context, event []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("eventbus: publish: %w", err)
	}
	v, err := decodeJSON(event)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%w: not a JSON object", ErrInvalidEvent)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	for _, r := range b.rules {
		if r.Pattern.matchEvent(obj) {
			b.startDelivery(r, append([]byte(nil), event...))
		}
	}
	return nil
}

// startDelivery must be called with b.mu held and the bus open.
func (b *Bus) startDelivery(r *rule, event []byte) {
	b.inflight.add()
	go func() {
		defer b.inflight.done()
		b.deliver(r, event)
	}()
}

// deliver delivers one event to a rule's target, retrying per its policy.
func (b *Bus) deliver(r *rule, event []byte) {
	log := b.log.With("rule", r.Name)
	var age time.Duration // bus time the event has waited
	for attempt := 1; ; attempt++ {
		started := time.Now()
		err := safeDeliver(b.ctx, r.Target, event)
		age += time.Since(started)
		if err == nil {
			if attempt > 1 {
				log.Debug("event delivered after retries", "attempts", attempt)
			}
			return
		}
		if b.ctx.Err() != nil {
			log.Warn("event dropped: bus closed during delivery", "attempts", attempt, "error", err)
			return
		}
		var reason error
		delay := backoff(attempt)
		switch {
		case attempt > r.retries:
			reason = ErrRetriesExhausted
		case age+delay > r.maxAge:
			reason = ErrEventTooOld
		}
		if reason != nil {
			b.deadLetter(r, event, &DeliveryError{Rule: r.Name, Attempts: attempt, Reason: reason, Last: err})
			return
		}
		log.Debug("delivery failed, retrying", "attempt", attempt, "delay", delay, "error", err)
		timer := time.NewTimer(b.scale(delay))
		select {
		case <-timer.C:
			age += delay
		case <-b.ctx.Done():
			timer.Stop()
			log.Warn("event dropped: bus closed during retry backoff", "attempts", attempt, "error", err)
			return
		}
	}
}

func (b *Bus) deadLetter(r *rule, event []byte, err *DeliveryError) {
	if r.DeadLetter == nil {
		b.log.Error("event lost: delivery failed and the rule has no dead letter",
			"rule", r.Name, "error", err, "event", string(event))
		return
	}
	defer func() {
		if v := recover(); v != nil {
			b.log.Error("dead letter panicked", "rule", r.Name, "panic", v, "error", err)
		}
	}()
	r.DeadLetter(b.ctx, event, err)
}

// safeDeliver calls the target, turning a panic into an error.
func safeDeliver(ctx context.Context, t Target, event []byte) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("eventbus: target panicked: %v", v)
		}
	}()
	return t.Deliver(ctx, event)
}

// backoff is the bus-time wait before retry attempt+1: exponential with
// equal jitter.
func backoff(attempt int) time.Duration {
	d := backoffCap
	if attempt < 20 {
		d = min(backoffBase<<(attempt-1), backoffCap)
	}
	return d/2 + mrand.N(d/2+1)
}

func (b *Bus) scale(d time.Duration) time.Duration {
	return max(time.Duration(float64(d)*b.cfg.TimeScale), time.Nanosecond)
}

// Drain waits until no delivery is in flight, including retries, or ctx
// ends. Schedules keep ticking; Drain returns at a moment with none in
// flight.
func (b *Bus) Drain(ctx context.Context) error {
	if err := b.inflight.wait(ctx); err != nil {
		return fmt.Errorf("eventbus: drain: %w", err)
	}
	return nil
}

// Close stops the schedules, refuses new events and waits for in-flight
// deliveries (retries included) until ctx ends; then it abandons those
// left, logging each.
func (b *Bus) Close(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.schedCancel()
	b.schedules.Wait()
	err := b.inflight.wait(ctx)
	b.cancel()
	if err != nil {
		return fmt.Errorf("eventbus: close: %w", err)
	}
	return nil
}

// tracker counts in-flight deliveries.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero
}

func (t *tracker) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		close(t.idle)
	}
}

func (t *tracker) wait(ctx context.Context) error {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return nil
	}
	idle := t.idle
	t.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

var rateRE = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

// ParseRate parses an EventBridge rate expression: rate(1 minute),
// rate(N minutes), likewise hours and days. cron(...) expressions give
// ErrUnsupportedSchedule.
func ParseRate(expression string) (time.Duration, error) {
	if len(expression) >= 5 && expression[:5] == "cron(" {
		return 0, fmt.Errorf("%w: %q: only rate(...) expressions run locally", ErrUnsupportedSchedule, expression)
	}
	m := rateRE.FindStringSubmatch(expression)
	if m == nil {
		return 0, fmt.Errorf("%w: schedule expression %q is not rate(N minute|minutes|hour|hours|day|days)", ErrInvalidRule, expression)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: schedule expression %q needs a positive value", ErrInvalidRule, expression)
	}
	unit := m[2]
	if plural := unit[len(unit)-1] == 's'; plural != (n != 1) {
		return 0, fmt.Errorf("%w: schedule expression %q: use the singular unit for 1 and the plural otherwise", ErrInvalidRule, expression)
	}
	d := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[unit[0]]
	return time.Duration(n) * d, nil
}

// AddSchedule adds a scheduled rule: every interval of the rate expression
// (scaled by Config.TimeScale) it delivers an EventBridge "Scheduled Event"
// to target, with the default retry policy and failures logged.
func (b *Bus) AddSchedule(name, expression string, target Target) error {
	return b.AddScheduleRule(Rule{Name: name, Target: target}, expression)
}

// AddScheduleRule adds a scheduled rule as AddSchedule does, with the
// rule's RetryPolicy and DeadLetter (its Pattern must be nil): a delivery
// the target refuses is retried and dead-lettered as a pattern rule's is.
func (b *Bus) AddScheduleRule(r Rule, expression string) error {
	every, err := ParseRate(expression)
	if err != nil {
		return err
	}
	if r.Pattern != nil {
		return fmt.Errorf("%w: schedule %s has a pattern", ErrInvalidRule, r.Name)
	}
	if err := b.addRule(r); err != nil {
		return err
	}
	retries, maxAge, _ := r.RetryPolicy.effective() // addRule checked it
	sched := &rule{Rule: r, retries: retries, maxAge: maxAge}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.schedules.Add(1)
	go b.runSchedule(sched, b.scale(every))
	return nil
}

func (b *Bus) runSchedule(r *rule, every time.Duration) {
	defer b.schedules.Done()
	first := every
	if b.cfg.FirstScheduleAfter > 0 {
		first = b.scale(b.cfg.FirstScheduleAfter)
	}
	timer := time.NewTimer(first)
	defer timer.Stop()
	for {
		select {
		case <-b.schedCtx.Done():
			return
		case <-timer.C:
			timer.Reset(every)
		}
		event, err := b.scheduledEvent(r.Name)
		if err != nil {
			b.log.Error("cannot build scheduled event", "rule", r.Name, "error", err)
			continue
		}
		b.mu.RLock()
		if !b.closed {
			b.startDelivery(r, event)
		}
		b.mu.RUnlock()
	}
}

// ScheduledEvent is the event a schedule delivers.
type ScheduledEvent struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

func (b *Bus) scheduledEvent(ruleName string) ([]byte, error) {
	return json.Marshal(ScheduledEvent{
		Version:    "0",
		ID:         newEventID(),
		DetailType: "Scheduled Event",
		Source:     "aws.events",
		Account:    b.cfg.AccountID,
		Time:       b.cfg.Now().UTC().Format("2006-01-02T15:04:05Z"),
		Region:     b.cfg.Region,
		Resources:  []string{b.RuleARN(ruleName)},
		Detail:     json.RawMessage(`{}`),
	})
}

// newEventID returns a random (version 4) UUID, the form of event IDs.
func newEventID() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
