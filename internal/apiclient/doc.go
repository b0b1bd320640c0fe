// Package apiclient is a Go client of the transfers API generated from
// its public contract, api/openapi.yaml, by oapi-codegen (go tool
// oapi-codegen, pinned in go.mod). TestClientIsCurrent regenerates it and
// fails when client.gen.go differs; the integration tests drive the
// local stack with it.
package apiclient

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../api/openapi.yaml
