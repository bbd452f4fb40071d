package exactlyonce

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultTransactionTimeout is the transaction timeout of the backends'
// transactional producers (confluent and franz DefaultTransactionTimeout)
// unless their TransactionalConfig sets one.
const DefaultTransactionTimeout = 10 * time.Second

// CheckConfig checks the fields the backends' TransactionalConfig share:
// a TransactionalID that is not blank, a TransactionTimeout and a
// CommitTimeout that are not negative. Its errors start with prefix
// ("confluent", "franz") and name the field.
func CheckConfig(prefix, transactionalID string, transactionTimeout, commitTimeout time.Duration) error {
	if strings.TrimSpace(transactionalID) == "" {
		return errors.New(prefix + ": TransactionalConfig.TransactionalID is empty")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"TransactionTimeout", transactionTimeout}, {"CommitTimeout", commitTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("%s: TransactionalConfig.%s = %v: want 0 (the default) or more", prefix, d.name, d.v)
		}
	}
	return nil
}

// TransactionTimeoutOrDefault is d, or DefaultTransactionTimeout when d
// is 0 (a TransactionalConfig.TransactionTimeout left unset).
func TransactionTimeoutOrDefault(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultTransactionTimeout
	}
	return d
}
