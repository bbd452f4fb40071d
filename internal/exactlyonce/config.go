package exactlyonce

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-go/sluice/sink"
)

// CheckConfig checks the client-independent half of the backends'
// TransactionalConfig: a TransactionalID that is not blank, a
// TransactionTimeout and a CommitTimeout that are not negative. Its errors
// start with prefix ("confluent", "franz") and name the field as
// TransactionalConfig.<Field>, as the backends' TransactionalConfig
// promotes it.
func CheckConfig(prefix string, c sink.TransactionConfig) error {
	if strings.TrimSpace(c.TransactionalID) == "" {
		return errors.New(prefix + ": TransactionalConfig.TransactionalID is empty")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"TransactionTimeout", c.TransactionTimeout}, {"CommitTimeout", c.CommitTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("%s: TransactionalConfig.%s = %v: want 0 (the default) or more", prefix, d.name, d.v)
		}
	}
	return nil
}

// TransactionTimeoutOrDefault is d, or sink.DefaultTransactionTimeout
// when d is 0 (a TransactionalConfig.TransactionTimeout left unset).
func TransactionTimeoutOrDefault(d time.Duration) time.Duration {
	if d == 0 {
		return sink.DefaultTransactionTimeout
	}
	return d
}
