package template_test

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/exactlyonce/transfers/examples/orders/internal/template"
	"github.com/exactlyonce/transfers/idempotency"
)

// The template's IdempotencyTable is the table the library documents:
// DefaultAttributes' keys and Time to Live.
func TestIdempotencyTableIsTheLibrarys(t *testing.T) {
	tbl, err := template.Find(template.Path(), "IdempotencyTable")
	if err != nil {
		t.Fatal(err)
	}
	a := idempotency.DefaultAttributes()
	if want := a.TableInput("IdempotencyTable"); !reflect.DeepEqual(tbl.Create, want) {
		t.Errorf("template's table %+v, want %+v", tbl.Create, want)
	}
	if want := a.TimeToLiveInput("x"); !reflect.DeepEqual(tbl.TTLInput("x"), want) {
		t.Errorf("Time to Live on %q, want %q", tbl.TimeToLive, aws.ToString(want.TimeToLiveSpecification.AttributeName))
	}
	orders, err := template.Find(template.Path(), "OrdersTable")
	if err != nil {
		t.Fatal(err)
	}
	if len(orders.Create.KeySchema) != 1 || aws.ToString(orders.Create.KeySchema[0].AttributeName) != "orderId" {
		t.Errorf("OrdersTable's keys %+v, want orderId alone", orders.Create.KeySchema)
	}
}
