package transfer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// storedSeeds are stored answers and requests: the forms the services
// write (the workflow's States.JsonToString, json.Marshal), and the
// forms encoding/json reads differently or refuses.
var storedSeeds = []string{
	`{"transferId":"0193a0b2-7c4d-7e8f-9a0b-1c2d3e4f5a6b","status":"COMPLETED","sourceAccountId":"demo-alice","destinationAccountId":"demo-bob","amount":1050,"currency":"EUR","reference":"rent","createdAt":"2026-11-26T10:00:00.123Z","settledAt":"2026-11-26T10:00:00.456Z"}`,
	`{"transferId":"t","status":"FAILED","sourceAccountId":"a","destinationAccountId":"b","amount":5,"currency":"EUR","reference":"","createdAt":"2026-11-26T10:00:00.123Z","settledAt":"2026-11-26T10:00:00.456Z","failure":{"code":"InsufficientFunds","detail":"not enough","reversed":false}}`,
	`{"transferId":"t","status":"FAILED","failure":{"code":"CurrencyMismatch","reversed":true},"amount":5}`,
	`{"failure":{},"amount":-0}`,
	`{"sourceAccountId":"a","destinationAccountId":"b","amount":1,"currency":"EUR","reference":""}`,
	`{"sourceAccountId":"demo-alice","destinationAccountId":"demo-bob","amount":1050,"currency":"USD","reference":"rent – März"}`,
	` { "transferId" : "t" ,` + "\n\t" + `"amount" : 7 } ` + "\r\n",
	`{}`, `{ }`, `[]`, `null`, ``, `"x"`, `{"amount":1}{}`, `{"amount":1},`,
	`{"transferId":"t","transferId":"u"}`,
	`{"failure":{"code":"A","detail":"x"},"failure":{"code":"B"}}`,
	`{"TransferId":"t"}`, `{"transferid":"t"}`, `{"other":1,"amount":2}`,
	`{"amount":1.0}`, `{"amount":1e3}`, `{"amount":01}`, `{"amount":"1"}`, `{"amount":-}`, `{"amount":99999999999999999999}`,
	`{"amount":-9223372036854775808}`, `{"amount":9223372036854775807}`, `{"amount":null}`, `{"amount":true}`,
	`{"transferId":null}`, `{"failure":null}`, `{"failure":{"reversed":"true"}}`, `{"failure":{"reversed":1}}`,
	`{"failure":{"code":"A","code":"B"}}`, `{"failure":{"extra":1}}`, `{"failure":{"reversed":truex}}`,
	`{"reference":"a\"b"}`, `{"reference":"a\\b"}`, `{"reference":"\u00e9<&>\u2028"}`, `{"reference":"é<&>` + "\u2028" + `"}`,
	"{\"reference\":\"a\tb\"}", "{\"reference\":\"\xff\"}", "{\"re\xffference\":\"a\"}", `{"reference":"\ud800"}`,
	`{"transferId":"t",}`, `{,}`, `{"transferId" "t"}`, `{"transferId":"t"`, `{"transferId":"t`,
}

// The plain decoders read what json.Unmarshal reads, or hand it over.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, s := range storedSeeds {
		checkDecode(t, s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		checkDecode(t, mutate(rng, storedSeeds[rng.IntN(len(storedSeeds))]))
	}
}

// The forms the services store take the plain path.
func TestStoredFormsArePlain(t *testing.T) {
	for _, s := range storedSeeds[:6] {
		if _, ok := decodeTransfer(s); !ok {
			t.Errorf("decodeTransfer(%s) was handed to encoding/json", s)
		}
	}
	if _, ok := decodeRequest(storedSeeds[4]); !ok {
		t.Errorf("decodeRequest(%s) was handed to encoding/json", storedSeeds[4])
	}
}

func FuzzDecodeTransfer(f *testing.F) {
	for _, s := range storedSeeds {
		f.Add(s)
	}
	f.Fuzz(checkDecode)
}

func checkDecode(t *testing.T, s string) {
	t.Helper()
	if got, ok := decodeTransfer(s); ok {
		var want Transfer
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("decodeTransfer(%q) = %+v, json.Unmarshal refuses it: %v", s, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeTransfer(%q) = %+v, json.Unmarshal reads %+v", s, got, want)
		}
	}
	if got, ok := decodeRequest(s); ok {
		var want Request
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("decodeRequest(%q) = %+v, json.Unmarshal refuses it: %v", s, got, err)
		}
		if got != want {
			t.Fatalf("decodeRequest(%q) = %+v, json.Unmarshal reads %+v", s, got, want)
		}
	}
}

// mutate changes s a little: a byte replaced, inserted or removed, or a
// piece of JSON put in.
func mutate(rng *rand.Rand, s string) string {
	pieces := []string{`"`, `\`, `{`, `}`, `,`, `:`, ` `, `null`, `true`, `-`, `0`, `.5`, `e3`, "\u2028", "\xff", "é", "<", `"amount":`, `"failure":{`, `"code":"x"`}
	for range 1 + rng.IntN(3) {
		i := 0
		if len(s) > 0 {
			i = rng.IntN(len(s))
		}
		switch rng.IntN(3) {
		case 0:
			s = s[:i] + pieces[rng.IntN(len(pieces))] + s[i:]
		case 1:
			if len(s) > 0 {
				s = s[:i] + s[i+1:]
			}
		default:
			if len(s) > 0 {
				s = s[:i] + string(rune(rng.IntN(256))) + s[i+1:]
			}
		}
	}
	return s
}

// Transfer.JSON and Request.Canonical write what json.Marshal writes.
func TestJSONMatchesEncodingJSON(t *testing.T) {
	texts := []string{"", "a", "demo-alice", "rent – März", "a\"b", `a\b`, "a\nb", "a\x00b", "<b>&", "\u2028", "\u2029", "\xff", "é\xffé", "\U0001F600", "\ufffd", "\x7f"}
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func() string {
		if rng.IntN(3) == 0 {
			var b strings.Builder
			for range rng.IntN(4) {
				b.WriteString(texts[rng.IntN(len(texts))])
			}
			return b.String()
		}
		return texts[rng.IntN(len(texts))]
	}
	for range 5000 {
		tr := Transfer{TransferID: pick(), Status: pick(), SourceAccountID: pick(), DestinationAccountID: pick(),
			Amount: rng.Int64() - rng.Int64(), Currency: pick(), Reference: pick(), CreatedAt: pick(), SettledAt: pick()}
		if rng.IntN(2) == 0 {
			tr.Failure = &Failure{Code: pick(), Detail: pick(), Reversed: rng.IntN(2) == 0}
		}
		checkEncode(t, tr)
	}
}

func FuzzTransferJSON(f *testing.F) {
	f.Add("t", "COMPLETED", "a", "b", int64(5), "EUR", "rent – März", "2026-11-26T10:00:00.123Z", "", "", "", false, false)
	f.Add("t", "FAILED", "a", "b", int64(-1), "EUR", "<&>", "x", "y", "Forbidden", "a\"b\u2028", true, true)
	f.Fuzz(func(t *testing.T, id, status, src, dst string, amount int64, currency, ref, created, settled, code, detail string, reversed, failed bool) {
		tr := Transfer{TransferID: id, Status: status, SourceAccountID: src, DestinationAccountID: dst, Amount: amount,
			Currency: currency, Reference: ref, CreatedAt: created, SettledAt: settled}
		if failed {
			tr.Failure = &Failure{Code: code, Detail: detail, Reversed: reversed}
		}
		checkEncode(t, tr)
	})
}

func checkEncode(t *testing.T, tr Transfer) {
	t.Helper()
	want, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.JSON(); !bytes.Equal(got, want) {
		t.Fatalf("%+v: JSON() = %s, json.Marshal writes %s", tr, got, want)
	}
	r := Request{SourceAccountID: tr.SourceAccountID, DestinationAccountID: tr.DestinationAccountID, Amount: tr.Amount, Currency: tr.Currency, Reference: tr.Reference}
	if want, _ := json.Marshal(r); !bytes.Equal(r.Canonical(), want) {
		t.Fatalf("%+v: Canonical() = %s, json.Marshal writes %s", r, r.Canonical(), want)
	}
}
