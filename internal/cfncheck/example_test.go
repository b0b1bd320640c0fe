package cfncheck_test

import (
	"fmt"

	"github.com/exactlyonce/transfers/internal/cfncheck"
)

func ExampleCheck() {
	tpl, _ := cfncheck.Parse([]byte(`{
  "Parameters": {"Stage": {"Type": "String"}},
  "Resources": {
    "Queue": {"Type": "AWS::SQS::Queue", "DependsOn": "Topic",
      "Properties": {"QueueName": {"Fn::Sub": "${AWS::StackName}-${Stage}-${!Literal}"}}},
    "Topic": {"Type": "AWS::SNS::Topic",
      "Properties": {"DisplayName": {"Fn::GetAtt": ["Queue", "Name"]}, "TopicName": null}}
  }
}`))
	for _, p := range cfncheck.Check(tpl) {
		fmt.Println(p)
	}
	// Output:
	// null Resources.Topic.Properties.TopicName: 'null' values are not allowed in templates
	// missing-attribute Resources.Topic.Properties.DisplayName: Fn::GetAtt Queue.Name: Queue (AWS::SQS::Queue) has no attribute Name; it has Arn, QueueName, QueueUrl
	// cycle Resources.Queue.DependsOn: circular dependency between resources: [Queue, Topic]; one cycle: Queue -> Topic (DependsOn at Resources.Queue.DependsOn) -> Queue (Fn::GetAtt Queue.Name at Resources.Topic.Properties.DisplayName)
}
