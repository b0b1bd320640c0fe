package bench

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// calls counts remote calls: one per operation the clients send (the
// Initialize step, before the SDK's retries), so that a retry the SDK
// makes for a throttled or failed attempt on a loaded machine is not
// taken for a call the implementation chose to make; a retry's time is
// in the figures all the same. Of them, reads counts the reads of an
// account's owner (a GetItem of ownerTable), which the orchestrator
// sends alongside its reservation when its container does not remember
// the owner: they are reported apart from the budget.
type calls struct {
	n, reads   atomic.Int64
	ownerTable string
}

func (c *calls) add(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("countCalls",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.n.Add(1)
			if get, ok := in.Parameters.(*dynamodb.GetItemInput); ok && c.ownerTable != "" && aws.ToString(get.TableName) == c.ownerTable {
				c.reads.Add(1)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// capture keeps the input of the latest call of each operation made
// through the clients it is added to, so that the benchmark can send the
// very call the project makes with a plain client.
type capture struct {
	mu     sync.Mutex
	inputs map[string]any
}

func (c *capture) add(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("captureInput",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			if c.inputs == nil {
				c.inputs = map[string]any{}
			}
			c.inputs[awsmiddleware.GetOperationName(ctx)] = in.Parameters
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// take returns and forgets the captured inputs.
func (c *capture) take() map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := maps.Clone(c.inputs)
	c.inputs = nil
	return in
}

// rewrite returns a deep copy of item in which every string value found
// in repl is replaced by its mapping: the same item for another key.
func rewrite(item map[string]types.AttributeValue, repl map[string]string) map[string]types.AttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(item))
	for k, v := range item {
		out[k] = rewriteValue(v, repl)
	}
	return out
}

func rewriteValue(v types.AttributeValue, repl map[string]string) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		if r, ok := repl[v.Value]; ok {
			return &types.AttributeValueMemberS{Value: r}
		}
		return &types.AttributeValueMemberS{Value: v.Value}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: rewrite(v.Value, repl)}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = rewriteValue(e, repl)
		}
		return &types.AttributeValueMemberL{Value: l}
	}
	return v
}
