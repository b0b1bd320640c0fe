package transfer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

//go:generate go run ./internal/genminor

// iso4217 lists the active ISO 4217 alphabetic codes, excluding the fund,
// precious-metal and testing codes (X..) that no account holds. Every
// one has its minor unit in the maintained table MinorUnits reads
// (TestEveryCurrencyHasMinorUnits): ANG (replaced by XCG in 2025) and
// BGN (by EUR in 2026) are no longer listed.
const iso4217 = `AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BHD BIF BMD BND BOB
BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB
EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD
JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP
MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON
RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP
TRY TTD TWD TZS UAH UGX USD UYU UZS VED VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG`

var currencies = func() map[string]bool {
	m := make(map[string]bool)
	for _, c := range strings.Fields(iso4217) {
		m[c] = true
	}
	return m
}()

// ValidCurrency reports whether code is an active ISO 4217 currency code.
func ValidCurrency(code string) bool { return currencies[code] }

// Currencies returns the accepted currency codes, sorted.
func Currencies() []string {
	codes := strings.Fields(iso4217)
	slices.Sort(codes)
	return codes
}

// MinorUnits returns the number of decimals of code's minor unit (2 for
// EUR, 0 for JPY, 3 for KWD), from ISO 4217 as github.com/bojanz/currency
// maintains it (generated into minorunits.go), and whether the code is an
// accepted currency.
func MinorUnits(code string) (int, bool) {
	d, ok := minorUnits[code]
	return d, ok
}

// AmountExample says what an amount of 1050 minor units is in code, such
// as "1050 is EUR 10.50" or "1050 is JPY 1050"; for a code that is not an
// accepted currency it speaks of EUR.
func AmountExample(code string) string {
	digits, ok := MinorUnits(code)
	if !ok || !ValidCurrency(code) {
		code, digits = "EUR", 2
	}
	const example = 1050
	major := strconv.Itoa(example)
	if digits > 0 {
		pad := fmt.Sprintf("%0*d", digits+1, example)
		major = pad[:len(pad)-digits] + "." + pad[len(pad)-digits:]
	}
	return fmt.Sprintf("%d is %s %s", example, code, major)
}
