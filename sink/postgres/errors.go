package postgres

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluice-go/sluice"
)

// classify marks err for the Writer (see package txsink, "Errors"):
//
//   - the value's fault, sluice.Invalid: SQLSTATE class 22 (data
//     exception: a value out of range, a bad text representation, a
//     string too long) and 23 (integrity constraint violation: unique,
//     not null, foreign key, check);
//   - the sink cannot be used, sluice.Permanent: class 28 (invalid
//     authorization: bad credentials), 3D (the database does not exist),
//     42 (syntax error or access rule violation: a missing table or
//     column, a missing privilege) and 0A (feature not supported);
//   - anything else is transient (retried): a lost connection (class 08),
//     a serialization failure (40001), a deadlock (40P01), the server
//     shutting down or starting (57P01-57P03), resources (53), a lock
//     timeout (55P03), and errors without a SQLSTATE.
//
// Context errors are returned unmarked.
func classify(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch {
	case strings.HasPrefix(pe.Code, "22"), strings.HasPrefix(pe.Code, "23"):
		return sluice.Invalid(err)
	case strings.HasPrefix(pe.Code, "28"), strings.HasPrefix(pe.Code, "3D"),
		strings.HasPrefix(pe.Code, "42"), strings.HasPrefix(pe.Code, "0A"):
		return sluice.Permanent(err)
	}
	return err
}

// classifyValue is classify for the write of one value: an error without a
// SQLSTATE while the connection is still open is the value's (pgx could
// not encode it for its column, so nothing reached the server).
func classifyValue(err error, conn *pgconn.PgConn) error {
	var pe *pgconn.PgError
	if err != nil && !errors.As(err, &pe) && conn != nil && !conn.IsClosed() &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !pgconn.SafeToRetry(err) && !pgconn.Timeout(err) {
		return sluice.Invalid(err)
	}
	return classify(err)
}
