package pgtest

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// connect opens a connection to dsn, closed when the test ends.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// queryString runs a query returning one text value in a new connection.
func queryString(t *testing.T, dsn, sql string) string {
	t.Helper()
	var v string
	if err := connect(t, dsn).QueryRow(context.Background(), sql).Scan(&v); err != nil {
		t.Fatalf("%s on %s: %v", sql, dsn, err)
	}
	return v
}

// execSQL runs statements in a new connection.
func execSQL(t *testing.T, dsn string, sql ...string) {
	t.Helper()
	conn := connect(t, dsn)
	for _, q := range sql {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s on %s: %v", q, dsn, err)
		}
	}
}

// dbOf is the database name in a DSN.
func dbOf(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}
