package idempotency

import (
	"reflect"
	"testing"
	"time"
)

func TestShareable(t *testing.T) {
	type flat struct {
		A int
		B string
		C [3]float64
		D time.Time
		E bool
	}
	type withSlice struct {
		A int
		B []int
	}
	for typ, want := range map[reflect.Type]bool{
		reflect.TypeFor[int]():                   true,
		reflect.TypeFor[string]():                true,
		reflect.TypeFor[time.Time]():             true,
		reflect.TypeFor[flat]():                  true,
		reflect.TypeFor[[2]flat]():               true,
		reflect.TypeFor[[]byte]():                false,
		reflect.TypeFor[withSlice]():             false,
		reflect.TypeFor[[1]withSlice]():          false,
		reflect.TypeFor[map[string]int]():        false,
		reflect.TypeFor[*int]():                  false,
		reflect.TypeFor[any]():                   false,
		reflect.TypeFor[func()]():                false,
		reflect.TypeFor[chan int]():              false,
		reflect.TypeFor[struct{ P *flat }]():     false,
		reflect.TypeFor[struct{ T time.Time }](): true,
	} {
		if got := shareable(typ); got != want {
			t.Errorf("shareable(%v) = %v, want %v", typ, got, want)
		}
	}
}
