package postgres

import "github.com/sluice-go/sluice/sink/txsink"

// NewStore returns the txsink.Store that New's Writer writes through, for
// the conformance suite and the tests of the SQL protocol. Only the
// fields of cfg that concern the store are used.
func NewStore(db DB, cfg Config) (txsink.Store[Row], error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return newStore(db, &cfg), nil
}

// Classify is classify, ClassifyValue classifyValue.
var (
	Classify      = classify
	ClassifyValue = classifyValue
)
