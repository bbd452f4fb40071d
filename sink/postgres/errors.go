package postgres

import (
	"context"
	"errors"
	"fmt"
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
//     3F (the schema does not exist),
//     42 (syntax error or access rule violation: a missing table or
//     column, a missing privilege) and 0A (feature not supported);
//   - anything else is transient (retried): a lost connection (class 08),
//     a serialization failure (40001), a deadlock (40P01), the server
//     shutting down or starting (57P01-57P03), a cancelled statement
//     (57014), resources (53), a lock timeout (55P03), and errors without
//     a SQLSTATE.
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
	case valueClass(pe.Code):
		return sluice.Invalid(err)
	case strings.HasPrefix(pe.Code, "28"), strings.HasPrefix(pe.Code, "3D"), strings.HasPrefix(pe.Code, "3F"),
		strings.HasPrefix(pe.Code, "42"), strings.HasPrefix(pe.Code, "0A"):
		return sluice.Permanent(err)
	}
	return err
}

// valueClass reports whether SQLSTATE code blames a value (classes 22
// and 23).
func valueClass(code string) bool {
	return strings.HasPrefix(code, "22") || strings.HasPrefix(code, "23")
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

// classifyBatch is classifyValue for the write of a batch, which the
// Writer then writes again row by row (Tx.WriteOne) when the error is
// marked sluice.Invalid. Besides a value's fault, two errors are
// marked so, as writing row by row gets past them:
//
//   - query_canceled (57014) from a COPY while the connection is open
//     and ctx is not done: pgx ends a COPY with CopyFail when it cannot
//     encode a value, and the server answers so (written alone, the row
//     is refused by pgx; a COPY cancelled for another reason, such as
//     statement_timeout, writes row by row);
//   - cardinality_violation (21000) from an upsert: the batch has two
//     rows with the same key, which one INSERT ... ON CONFLICT DO UPDATE
//     cannot write; one at a time, the later row updates the earlier.
func classifyBatch(ctx context.Context, err error, conn *pgconn.PgConn) error {
	var pe *pgconn.PgError
	if ctx.Err() == nil && errors.As(err, &pe) && conn != nil && !conn.IsClosed() {
		switch pe.Code {
		case "57014":
			return sluice.Invalid(fmt.Errorf("%w (a value pgx cannot encode?)", err))
		case "21000":
			return sluice.Invalid(fmt.Errorf("%w (rows with the same key in one batch)", err))
		}
	}
	return classifyValue(err, conn)
}

// classifyNoValue is classify for a statement that writes no value (the
// offsets table's): an error of class 22 or 23 is no value's fault and
// cannot be retried away, so it is permanent.
func classifyNoValue(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && valueClass(pe.Code) {
		return sluice.Permanent(err)
	}
	return classify(err)
}
