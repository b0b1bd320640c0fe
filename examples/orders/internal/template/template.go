// Package template reads the DynamoDB tables of the example's SAM
// template, so that the tests and the local server create the tables the
// stack deploys, from the same text.
package template

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"gopkg.in/yaml.v3"
)

// Path is template.yaml's path in the module's source tree.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "template.yaml")
}

// Table is a table of the template: the CreateTable call that makes it
// (named after its logical id) and its Time to Live attribute, if any.
type Table struct {
	LogicalID  string
	Create     *dynamodb.CreateTableInput
	TimeToLive string
}

// TTLInput enables the table's Time to Live under name, or is nil.
func (t Table) TTLInput(name string) *dynamodb.UpdateTimeToLiveInput {
	if t.TimeToLive == "" {
		return nil
	}
	return &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(t.TimeToLive), Enabled: aws.Bool(true)},
	}
}

type tableProperties struct {
	BillingMode          string `yaml:"BillingMode"`
	AttributeDefinitions []struct {
		AttributeName string `yaml:"AttributeName"`
		AttributeType string `yaml:"AttributeType"`
	} `yaml:"AttributeDefinitions"`
	KeySchema []struct {
		AttributeName string `yaml:"AttributeName"`
		KeyType       string `yaml:"KeyType"`
	} `yaml:"KeySchema"`
	TimeToLiveSpecification struct {
		AttributeName string `yaml:"AttributeName"`
		Enabled       bool   `yaml:"Enabled"`
	} `yaml:"TimeToLiveSpecification"`
}

// Tables reads the AWS::DynamoDB::Table resources of the template at
// path: their keys, billing mode and Time to Live (the example's tables
// have no index). They are in the order of their logical ids.
func Tables(path string) ([]Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Resources map[string]struct {
			Type       string    `yaml:"Type"`
			Properties yaml.Node `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []Table
	for id, r := range doc.Resources {
		if r.Type != "AWS::DynamoDB::Table" {
			continue
		}
		var p tableProperties
		if err := r.Properties.Decode(&p); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, id, err)
		}
		in := &dynamodb.CreateTableInput{TableName: aws.String(id), BillingMode: types.BillingMode(p.BillingMode)}
		for _, a := range p.AttributeDefinitions {
			in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(a.AttributeName), AttributeType: types.ScalarAttributeType(a.AttributeType)})
		}
		for _, k := range p.KeySchema {
			in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: types.KeyType(k.KeyType)})
		}
		t := Table{LogicalID: id, Create: in}
		if p.TimeToLiveSpecification.Enabled {
			t.TimeToLive = p.TimeToLiveSpecification.AttributeName
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out, nil
}

// Find is the table of the template at path with the logical id.
func Find(path, logicalID string) (Table, error) {
	tables, err := Tables(path)
	if err != nil {
		return Table{}, err
	}
	for _, t := range tables {
		if t.LogicalID == logicalID {
			return t, nil
		}
	}
	return Table{}, fmt.Errorf("%s has no table %s", path, logicalID)
}
