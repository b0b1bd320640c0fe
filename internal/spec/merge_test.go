package spec_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/spec"
)

// api/openapi.gateway.json is the merge of the public contract and API
// Gateway's patch as they are now: run `make api` after changing either.
func TestGatewayDocumentIsCurrent(t *testing.T) {
	public, err := os.ReadFile(spec.SourceFile())
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := os.ReadFile(spec.OverlayFile())
	if err != nil {
		t.Fatal(err)
	}
	want, err := spec.Merge(public, overlay)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(spec.GatewayFile())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not the merge of %s and %s: run make api", spec.GatewayFile(), spec.SourceFile(), spec.OverlayFile())
	}
	if _, err := spec.Load(got); err != nil {
		t.Fatalf("the merged document: %v", err)
	}
}

// The public contract is for clients: no API Gateway extension, no
// CloudFormation intrinsic; servers, and a typed body.
func TestPublicContractIsClean(t *testing.T) {
	public, err := os.ReadFile(spec.SourceFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"x-amazon-apigateway", "Fn::", "AWS::", "TransferRequestBody"} {
		if bytes.Contains(public, []byte(s)) {
			t.Errorf("%s mentions %s", spec.SourceFile(), s)
		}
	}
	doc, err := spec.Source()
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Doc().Servers) == 0 {
		t.Error("no servers")
	}
	for _, r := range doc.Routes() {
		op := r.Operation
		if op.OperationID == "" {
			t.Errorf("%s %s: no operationId", r.Method, r.Path)
		}
		if op.RequestBody != nil {
			for mt, media := range op.RequestBody.Value.Content {
				if media.Schema == nil || media.Schema.Ref == "" || !strings.HasSuffix(media.Schema.Ref, "/TransferRequest") {
					t.Errorf("%s %s: %s body is not the TransferRequest schema", r.Method, r.Path, mt)
				}
			}
		}
		for status, resp := range op.Responses.Map() {
			for mt, media := range resp.Value.Content {
				if media.Schema == nil || (media.Schema.Ref == "" && len(media.Schema.Value.AllOf) == 0) {
					t.Errorf("%s %s %s %s: the schema is not a named one", r.Method, r.Path, status, mt)
				}
			}
		}
	}
}
