module github.com/exactlyonce/transfers/idempotency/redisstore

go 1.24.0

require (
	github.com/exactlyonce/transfers/idempotency v0.0.0
	github.com/redis/go-redis/v9 v9.20.1
)

require (
	github.com/aws/aws-lambda-go v1.54.0 // indirect
	github.com/aws/aws-sdk-go-v2 v1.47.7 // indirect
	github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue v1.21.19 // indirect
	github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression v1.10.7 // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.10 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.10 // indirect
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.73.1 // indirect
	github.com/aws/aws-sdk-go-v2/service/dynamodbstreams v1.46.6 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.24 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.10 // indirect
	github.com/aws/smithy-go v1.28.8 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
)

replace github.com/exactlyonce/transfers/idempotency => ../
