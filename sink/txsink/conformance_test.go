package txsink_test

import (
	"errors"
	"testing"

	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
)

// The in-memory reference store keeps the contract the suite checks.
func TestMemStoreConformance(t *testing.T) {
	txsinktest.Run(t, txsinktest.Harness[int]{
		New: func(*testing.T) txsink.Store[int] {
			s := txsinktest.NewMemStore[int]()
			s.Refuse = refuseNegative
			return s
		},
		Value:   func(i int) int { return i },
		Refused: func(i int) int { return -i },
		Rows:    func(_ *testing.T, s txsink.Store[int]) []int { return s.(*txsinktest.MemStore[int]).Rows() },
	})
}

func refuseNegative(v int) error {
	if v < 0 {
		return errors.New("value is negative")
	}
	return nil
}
