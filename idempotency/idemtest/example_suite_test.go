package idemtest_test

import (
	"testing"

	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// A store of your own passes the conformance suite that the library's
// stores pass. PutForeign, when given, writes a record of another format
// under (scope, key), for the cases that check such a record is refused;
// Diverges names cases the store knowingly fails, with the reason.
func ExampleRunPersistenceSuite() {
	_ = func(t *testing.T) {
		idemtest.RunPersistenceSuite(t, func(*testing.T) idemtest.SuiteStore {
			return idemtest.SuiteStore{Store: idemtest.NewMemoryStore()} // your store here
		})
	}
}

// SuiteStore says what the suite may do with a store beyond its methods.
func ExampleSuiteStore() {
	_ = func(t *testing.T) {
		store := idemtest.NewMemoryStore()
		idemtest.RunPersistenceSuite(t, func(*testing.T) idemtest.SuiteStore {
			return idemtest.SuiteStore{
				Store: store,
				// No way to write a record of another format: the cases
				// that need one skip.
				PutForeign: nil,
				Diverges:   map[string]string{},
			}
		})
	}
}
