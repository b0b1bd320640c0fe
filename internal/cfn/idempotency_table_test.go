package cfn_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// idempotencyTable is template.yaml's IdempotencyTable, freshly resolved.
func idempotencyTable(t *testing.T, tmpl *cfn.Template) cfn.Table {
	t.Helper()
	tables, err := tmpl.Tables(cfn.Env{})
	if err != nil {
		t.Fatalf("Tables: %v", err)
	}
	for _, tbl := range tables {
		if tbl.LogicalID == "IdempotencyTable" {
			return tbl
		}
	}
	t.Fatal("template.yaml has no IdempotencyTable")
	return cfn.Table{}
}

// schemaGaps lists what table lacks of the schema want and the Time to
// Live ttl: the same key, each attribute definition with its type, each
// global secondary index with the same keys and a projection that carries
// at least the same attributes, and Time to Live on the same attribute.
// More indexes, attributes or projected attributes are no gap.
func schemaGaps(table cfn.Table, want *dynamodb.CreateTableInput, ttl *dynamodb.UpdateTimeToLiveInput) []string {
	var gaps []string
	in := table.Input
	if got, w := keySchema(in.KeySchema), keySchema(want.KeySchema); got != w {
		gaps = append(gaps, fmt.Sprintf("key %s, want %s", got, w))
	}
	attrTypes := map[string]types.ScalarAttributeType{}
	for _, d := range in.AttributeDefinitions {
		attrTypes[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	for _, d := range want.AttributeDefinitions {
		name := aws.ToString(d.AttributeName)
		if got, ok := attrTypes[name]; !ok || got != d.AttributeType {
			gaps = append(gaps, fmt.Sprintf("attribute %s of type %q, want %q", name, got, d.AttributeType))
		}
	}
	for _, w := range want.GlobalSecondaryIndexes {
		name := aws.ToString(w.IndexName)
		i := slices.IndexFunc(in.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndex) bool { return aws.ToString(g.IndexName) == name })
		if i < 0 {
			gaps = append(gaps, "no index "+name)
			continue
		}
		g := in.GlobalSecondaryIndexes[i]
		if got, wk := keySchema(g.KeySchema), keySchema(w.KeySchema); got != wk {
			gaps = append(gaps, fmt.Sprintf("index %s: key %s, want %s", name, got, wk))
		}
		if missing := notProjected(g.Projection, w.Projection); missing != "" {
			gaps = append(gaps, fmt.Sprintf("index %s: %s", name, missing))
		}
	}
	wantTTL := aws.ToString(ttl.TimeToLiveSpecification.AttributeName)
	if s := table.TimeToLive; s == nil || !aws.ToBool(s.Enabled) || aws.ToString(s.AttributeName) != wantTTL {
		gaps = append(gaps, fmt.Sprintf("time to live %+v, want enabled on %s", s, wantTTL))
	}
	return gaps
}

// notProjected says what projection got leaves out of want, "" if
// nothing.
func notProjected(got, want *types.Projection) string {
	if want == nil || want.ProjectionType == types.ProjectionTypeKeysOnly {
		return ""
	}
	if got == nil {
		return "no projection, want " + string(want.ProjectionType)
	}
	switch {
	case got.ProjectionType == types.ProjectionTypeAll:
		return ""
	case want.ProjectionType == types.ProjectionTypeAll:
		return fmt.Sprintf("projection %s, want ALL", got.ProjectionType)
	case got.ProjectionType != types.ProjectionTypeInclude:
		return fmt.Sprintf("projection %s, want INCLUDE %v", got.ProjectionType, want.NonKeyAttributes)
	}
	var missing []string
	for _, a := range want.NonKeyAttributes {
		if !slices.Contains(got.NonKeyAttributes, a) {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("projection INCLUDE %v lacks %v", got.NonKeyAttributes, missing)
	}
	return ""
}

// TestIdempotencyTableServesTheStore: template.yaml's IdempotencyTable has
// at least the schema the service's reservation store needs, as it
// declares it (reservation.TableInput, TimeToLiveInput): its key,
// the indexes the Store queries with their keys and projections, and Time
// to Live on the attribute a settled record carries. So the two cannot
// drift apart.
func TestIdempotencyTableServesTheStore(t *testing.T) {
	tbl := idempotencyTable(t, projectTemplate(t))
	for _, gap := range schemaGaps(tbl, reservation.TableInput("x"), reservation.TimeToLiveInput("x")) {
		t.Errorf("IdempotencyTable: %s", gap)
	}
}

// TestSchemaGaps: each way the template's table could drift from the
// library's schema is reported, and what only adds to it is not.
func TestSchemaGaps(t *testing.T) {
	tmpl := projectTemplate(t)
	index := func(tbl cfn.Table, name string) *types.GlobalSecondaryIndex {
		for i := range tbl.Input.GlobalSecondaryIndexes {
			if aws.ToString(tbl.Input.GlobalSecondaryIndexes[i].IndexName) == name {
				return &tbl.Input.GlobalSecondaryIndexes[i]
			}
		}
		t.Fatalf("no index %s", name)
		return nil
	}
	tests := []struct {
		name   string
		change func(cfn.Table) cfn.Table
		gap    bool
	}{
		{"as declared", func(tbl cfn.Table) cfn.Table { return tbl }, false},
		{"another key", func(tbl cfn.Table) cfn.Table {
			tbl.Input.KeySchema = append(tbl.Input.KeySchema, types.KeySchemaElement{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange})
			return tbl
		}, true},
		{"an index dropped", func(tbl cfn.Table) cfn.Table {
			tbl.Input.GlobalSecondaryIndexes = slices.DeleteFunc(tbl.Input.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndex) bool {
				return aws.ToString(g.IndexName) == reservation.IndexByResourceID
			})
			return tbl
		}, true},
		{"an index's range key dropped", func(tbl cfn.Table) cfn.Table {
			g := index(tbl, reservation.IndexByScope)
			g.KeySchema = g.KeySchema[:1]
			return tbl
		}, true},
		{"an attribute projected no more", func(tbl cfn.Table) cfn.Table {
			p := index(tbl, reservation.IndexByScope).Projection
			p.NonKeyAttributes = slices.DeleteFunc(slices.Clone(p.NonKeyAttributes), func(a string) bool { return a == "response" })
			return tbl
		}, true},
		{"keys only where all are read", func(tbl cfn.Table) cfn.Table {
			index(tbl, reservation.IndexByResourceID).Projection = &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
			return tbl
		}, true},
		{"a key attribute of another type", func(tbl cfn.Table) cfn.Table {
			for i, d := range tbl.Input.AttributeDefinitions {
				if aws.ToString(d.AttributeName) == reservation.AttrCreatedAt {
					tbl.Input.AttributeDefinitions[i].AttributeType = types.ScalarAttributeTypeN
				}
			}
			return tbl
		}, true},
		{"time to live on another attribute", func(tbl cfn.Table) cfn.Table {
			tbl.TimeToLive = &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}
			return tbl
		}, true},
		{"no time to live", func(tbl cfn.Table) cfn.Table { tbl.TimeToLive = nil; return tbl }, true},
		{"all projected where some are read", func(tbl cfn.Table) cfn.Table {
			index(tbl, reservation.IndexByScope).Projection = &types.Projection{ProjectionType: types.ProjectionTypeAll}
			return tbl
		}, false},
		{"another index", func(tbl cfn.Table) cfn.Table {
			tbl.Input.GlobalSecondaryIndexes = append(tbl.Input.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
				IndexName:  aws.String("Extra"),
				KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String(reservation.AttrStatus), KeyType: types.KeyTypeHash}},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			})
			return tbl
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := tt.change(idempotencyTable(t, tmpl))
			gaps := schemaGaps(tbl, reservation.TableInput("x"), reservation.TimeToLiveInput("x"))
			if (len(gaps) > 0) != tt.gap {
				t.Errorf("gaps %q, want a gap: %v", gaps, tt.gap)
			}
		})
	}
}
