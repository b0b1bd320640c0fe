package main

import (
	"fmt"
	"math/rand/v2"
)

// op is a kind of request the load generator sends.
type op int

const (
	// opNew is a transfer with a fresh key that the source can pay.
	opNew op = iota
	// opInsufficient is a transfer with a fresh key and an amount above
	// every balance: accepted, then FAILED with insufficient_funds.
	opInsufficient
	// opDuplicate resends an earlier key with its body: a replay.
	opDuplicate
	// opReuse sends an earlier key with another body: 422
	// idempotency_key_reused, nothing changes.
	opReuse
	numOps
)

var opNames = [numOps]string{"new", "insufficient", "duplicate", "reuse"}

func (o op) String() string {
	if o < 0 || o >= numOps {
		return fmt.Sprintf("op(%d)", int(o))
	}
	return opNames[o]
}

// mix is the share of each kind of request; the rest are opNew.
type mix struct {
	Duplicate, Reuse, Insufficient float64
}

func (m mix) validate() error {
	for _, s := range []struct {
		name string
		v    float64
	}{{"-dup", m.Duplicate}, {"-reuse", m.Reuse}, {"-insufficient", m.Insufficient}} {
		if !(s.v >= 0 && s.v <= 1) {
			return fmt.Errorf("%s %v is not a share between 0 and 1", s.name, s.v)
		}
	}
	if sum := m.Duplicate + m.Reuse + m.Insufficient; sum > 1 {
		return fmt.Errorf("-dup, -reuse and -insufficient add up to %v, more than 1", sum)
	}
	return nil
}

// pick draws the next kind of request.
func (m mix) pick(r *rand.Rand) op {
	x := r.Float64()
	switch {
	case x < m.Duplicate:
		return opDuplicate
	case x < m.Duplicate+m.Reuse:
		return opReuse
	case x < m.Duplicate+m.Reuse+m.Insufficient:
		return opInsufficient
	}
	return opNew
}

// clientRand is client i's random source for a run's seed: the same seed
// draws the same sequence of requests for each client.
func clientRand(seed uint64, client int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(client)+1))
}
