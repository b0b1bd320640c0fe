package transfer

import "testing"

// BenchmarkParse is the cost of reading a request body, the first work of
// every request: a plain body, and one whose reference holds escapes.
func BenchmarkParse(b *testing.B) {
	for _, bm := range []struct{ name, body string }{
		{"plain", `{"sourceAccountId":"demo-alice","destinationAccountId":"demo-bob","amount":1050,"currency":"EUR","reference":"invoice 2026-118"}`},
		{"escaped", `{"sourceAccountId":"demo-alice","destinationAccountId":"demo-bob","amount":1050,"currency":"EUR","reference":"rent \u2013 M\u00e4rz"}`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			body := []byte(bm.body)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Parse(body, 1<<40); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
