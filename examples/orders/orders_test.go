package orders_test

import (
	"errors"
	"testing"

	"github.com/exactlyonce/transfers/examples/orders"
)

func TestParse(t *testing.T) {
	good := `{"customer":"c-42","sku":"mug","quantity":2,"amountCents":1800}`
	if r, err := orders.Parse([]byte(good)); err != nil || r != (orders.Request{Customer: "c-42", SKU: "mug", Quantity: 2, AmountCents: 1800}) {
		t.Errorf("Parse(%s) = %+v, %v", good, r, err)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{}`, good + good,
		`{"customer":"c-42","sku":"mug","quantity":101,"amountCents":1800}`,
		`{"customer":"c-42","sku":"mug","quantity":1,"amountCents":0}`,
		`{"customer":"c-42","sku":"mug","quantity":1,"amountCents":100000001}`,
		`{"customer":"c-42","sku":"","quantity":1,"amountCents":1}`,
		`{"customer":"c-42","sku":"mug","quantity":1,"amountCents":1,"x":1}`,
		`{"customer":"c-42","sku":"mug","quantity":"1","amountCents":1}`,
	} {
		if _, err := orders.Parse([]byte(bad)); !errors.Is(err, orders.ErrInvalid) {
			t.Errorf("Parse(%s) = %v, want ErrInvalid", bad, err)
		}
	}
}
