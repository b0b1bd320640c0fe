package cfn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Table is an AWS::DynamoDB::Table as the DynamoDB API creates it.
type Table struct {
	LogicalID string
	// Input creates the table; Input.TableName is the physical name.
	Input *dynamodb.CreateTableInput
	// TimeToLive, when set and enabled, is applied with UpdateTimeToLive
	// after the table is created (CreateTable has no TTL parameter).
	TimeToLive *types.TimeToLiveSpecification
}

// ignoredTableProperties are the AWS::DynamoDB::Table properties that AWS
// accepts but that have no meaning for (or are refused by) DynamoDB Local.
// They are skipped deliberately; any other property this package does not
// map is an error, so a new table feature cannot silently be left out of
// the local tables.
var ignoredTableProperties = map[string]string{
	"PointInTimeRecoverySpecification": "backups do not exist locally",
	"SSESpecification":                 "encryption at rest is an AWS-side setting",
	"Tags":                             "tags are for AWS billing and access control",
	"DeletionProtectionEnabled":        "protects the deployed table only",
	"ContributorInsightsSpecification": "CloudWatch Contributor Insights does not exist locally",
	"TableClass":                       "storage class is an AWS billing setting",
	"ResourcePolicy":                   "resource policies are not evaluated locally",
}

// ignoredIndexProperties and ignoredStreamProperties are the same for the
// entries of GlobalSecondaryIndexes and for StreamSpecification.
var (
	ignoredIndexProperties = map[string]string{
		"ContributorInsightsSpecification": "CloudWatch Contributor Insights does not exist locally",
	}
	ignoredStreamProperties = map[string]string{
		"ResourcePolicy": "resource policies are not evaluated locally",
	}
)

// Tables returns the template's AWS::DynamoDB::Table resources (those
// whose condition holds) in document order.
func (t *Template) Tables(env Env) ([]Table, error) {
	r, err := NewResolver(t, env)
	if err != nil {
		return nil, err
	}
	var out []Table
	resources, err := r.existing(TypeTable)
	if err != nil {
		return nil, err
	}
	for _, res := range resources {
		tbl, err := r.table(res)
		if err != nil {
			return nil, err
		}
		out = append(out, tbl)
	}
	return out, nil
}

func (r *Resolver) table(res *Resource) (Table, error) {
	name, err := r.PhysicalName(res)
	if err != nil {
		return Table{}, err
	}
	p, err := r.object(res.Properties)
	if err != nil {
		return Table{}, err
	}
	p.get("TableName")
	in := &dynamodb.CreateTableInput{TableName: aws.String(name)}
	attrs, err := p.objects("AttributeDefinitions")
	if err != nil {
		return Table{}, err
	}
	for _, a := range attrs {
		an, err := a.str("AttributeName", true)
		if err != nil {
			return Table{}, err
		}
		at, err := a.str("AttributeType", true)
		if err != nil {
			return Table{}, err
		}
		if err := a.unknown("AttributeDefinition", nil); err != nil {
			return Table{}, err
		}
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(an), AttributeType: types.ScalarAttributeType(at),
		})
	}
	if in.KeySchema, err = keySchema(p, "KeySchema"); err != nil {
		return Table{}, err
	}
	if in.KeySchema == nil {
		return Table{}, r.errAt(res.Properties, ErrInvalid, "KeySchema is required")
	}
	bm, err := p.str("BillingMode", false)
	if err != nil {
		return Table{}, err
	}
	in.BillingMode = types.BillingMode(bm)
	if in.ProvisionedThroughput, err = throughput(p); err != nil {
		return Table{}, err
	}
	gsis, err := p.objects("GlobalSecondaryIndexes")
	if err != nil {
		return Table{}, err
	}
	for _, g := range gsis {
		idx := types.GlobalSecondaryIndex{}
		if idx.IndexName, err = strPtr(g, "IndexName"); err != nil {
			return Table{}, err
		}
		if idx.KeySchema, err = keySchema(g, "KeySchema"); err != nil {
			return Table{}, err
		}
		if idx.Projection, err = projection(g); err != nil {
			return Table{}, err
		}
		if idx.ProvisionedThroughput, err = throughput(g); err != nil {
			return Table{}, err
		}
		if err := g.unknown("GlobalSecondaryIndex", ignoredIndexProperties); err != nil {
			return Table{}, err
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, idx)
	}
	lsis, err := p.objects("LocalSecondaryIndexes")
	if err != nil {
		return Table{}, err
	}
	for _, l := range lsis {
		idx := types.LocalSecondaryIndex{}
		if idx.IndexName, err = strPtr(l, "IndexName"); err != nil {
			return Table{}, err
		}
		if idx.KeySchema, err = keySchema(l, "KeySchema"); err != nil {
			return Table{}, err
		}
		if idx.Projection, err = projection(l); err != nil {
			return Table{}, err
		}
		if err := l.unknown("LocalSecondaryIndex", nil); err != nil {
			return Table{}, err
		}
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, idx)
	}
	if s, ok, err := p.child("StreamSpecification"); err != nil {
		return Table{}, err
	} else if ok {
		vt, err := s.str("StreamViewType", true)
		if err != nil {
			return Table{}, err
		}
		if err := s.unknown("StreamSpecification", ignoredStreamProperties); err != nil {
			return Table{}, err
		}
		// In CloudFormation the presence of StreamSpecification enables
		// the stream.
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewType(vt)}
	}
	tbl := Table{LogicalID: res.LogicalID, Input: in}
	if s, ok, err := p.child("TimeToLiveSpecification"); err != nil {
		return Table{}, err
	} else if ok {
		an, err := s.str("AttributeName", false)
		if err != nil {
			return Table{}, err
		}
		enabled, _, err := s.boolean("Enabled")
		if err != nil {
			return Table{}, err
		}
		if err := s.unknown("TimeToLiveSpecification", nil); err != nil {
			return Table{}, err
		}
		if enabled && an == "" {
			return Table{}, r.errAt(s.node, ErrInvalid, "TimeToLiveSpecification.AttributeName is required when Enabled")
		}
		tbl.TimeToLive = &types.TimeToLiveSpecification{AttributeName: aws.String(an), Enabled: aws.Bool(enabled)}
	}
	if err := p.unknown(TypeTable, ignoredTableProperties); err != nil {
		return Table{}, err
	}
	return tbl, nil
}

func strPtr(o *object, key string) (*string, error) {
	s, err := o.str(key, true)
	if err != nil {
		return nil, err
	}
	return aws.String(s), nil
}

func keySchema(o *object, key string) ([]types.KeySchemaElement, error) {
	elems, err := o.objects(key)
	if err != nil {
		return nil, err
	}
	var out []types.KeySchemaElement
	for _, e := range elems {
		an, err := e.str("AttributeName", true)
		if err != nil {
			return nil, err
		}
		kt, err := e.str("KeyType", true)
		if err != nil {
			return nil, err
		}
		if err := e.unknown("KeySchema element", nil); err != nil {
			return nil, err
		}
		out = append(out, types.KeySchemaElement{AttributeName: aws.String(an), KeyType: types.KeyType(kt)})
	}
	return out, nil
}

func projection(o *object) (*types.Projection, error) {
	p, ok, err := o.child("Projection")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, o.r.errAt(o.node, ErrInvalid, "Projection is required")
	}
	pt, err := p.str("ProjectionType", false)
	if err != nil {
		return nil, err
	}
	nk, err := p.strings("NonKeyAttributes")
	if err != nil {
		return nil, err
	}
	if err := p.unknown("Projection", nil); err != nil {
		return nil, err
	}
	return &types.Projection{ProjectionType: types.ProjectionType(pt), NonKeyAttributes: nk}, nil
}

func throughput(o *object) (*types.ProvisionedThroughput, error) {
	p, ok, err := o.child("ProvisionedThroughput")
	if err != nil || !ok {
		return nil, err
	}
	rcu, _, err := p.integer("ReadCapacityUnits")
	if err != nil {
		return nil, err
	}
	wcu, _, err := p.integer("WriteCapacityUnits")
	if err != nil {
		return nil, err
	}
	if err := p.unknown("ProvisionedThroughput", nil); err != nil {
		return nil, err
	}
	return &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(rcu), WriteCapacityUnits: aws.Int64(wcu)}, nil
}

// TableClient is the part of *dynamodb.Client that CreateTables uses.
type TableClient interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// ErrTableNotActive is returned when a created table (or one of its
// indexes) does not become ACTIVE before the context ends.
var ErrTableNotActive = errors.New("table did not become ACTIVE")

// activePoll is how often CreateTables checks a new table's status.
const activePoll = 50 * time.Millisecond

// CreateTables creates the tables, waits until each table and its global
// secondary indexes are ACTIVE, and enables Time to Live where the
// template enables it. name gives the physical name of each table (for
// example with a per-test suffix); nil keeps Input.TableName. The Table
// values are not modified.
func CreateTables(ctx context.Context, client TableClient, tables []Table, name func(Table) string) error {
	for _, t := range tables {
		in := *t.Input
		if name != nil {
			in.TableName = aws.String(name(t))
		}
		tn := aws.ToString(in.TableName)
		if _, err := client.CreateTable(ctx, &in); err != nil {
			return fmt.Errorf("cfn: create table %s (%s): %w", tn, t.LogicalID, err)
		}
		if err := waitActive(ctx, client, tn); err != nil {
			return fmt.Errorf("cfn: table %s (%s): %w", tn, t.LogicalID, err)
		}
		if t.TimeToLive != nil && aws.ToBool(t.TimeToLive.Enabled) {
			ttl := *t.TimeToLive
			if _, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tn), TimeToLiveSpecification: &ttl}); err != nil {
				return fmt.Errorf("cfn: enable time to live on %s (%s): %w", tn, t.LogicalID, err)
			}
		}
	}
	return nil
}

func waitActive(ctx context.Context, client TableClient, name string) error {
	tick := time.NewTicker(activePoll)
	defer tick.Stop()
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("describe: %w", err)
		}
		if isActive(out.Table) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrTableNotActive, ctx.Err())
		case <-tick.C:
		}
	}
}

func isActive(d *types.TableDescription) bool {
	if d == nil || d.TableStatus != types.TableStatusActive {
		return false
	}
	for _, g := range d.GlobalSecondaryIndexes {
		if g.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}
