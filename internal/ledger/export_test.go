package ledger

import (
	"context"
	"fmt"
)

// Resolve runs the interpretation of a failed leg transaction on err, as
// Post does when TransactWriteItems returns err, so tests can feed it
// cancellation reasons that DynamoDB Local never produces.
func (l *Ledger) Resolve(ctx context.Context, leg Leg, err error) (Entry, error) {
	p, perr := l.plan(leg, 0)
	if perr != nil {
		return Entry{}, perr
	}
	e, err := l.resolve(ctx, p, err)
	if err != nil {
		return Entry{}, fmt.Errorf("%s %s: %w", leg.Kind.verb(), leg.TransferID, err)
	}
	return e, nil
}
