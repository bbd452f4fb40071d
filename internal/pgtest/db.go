package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// dbTimeout bounds each statement and connection of CreateDatabase, its
// cleanup and Pool.
const dbTimeout = 30 * time.Second

// DSN returns the URL of database db on the server, for the superuser
// without a password and without TLS:
// postgres://postgres@127.0.0.1:<port>/<db>?sslmode=disable. It does not
// check that db exists. "postgres" always does.
func (s *Server) DSN(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(superuser),
		Host:     s.Addr(),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// CreateDatabase creates a new, empty database and returns its DSN. Its
// name is name, lower-cased with every character other than a-z, 0-9 and
// '_' made '_', followed by '_' and a number unique on this server, so
// that each call, with t.Name() or any name, gets a database of its own.
// The database is dropped when the test ends (open sessions are ended),
// unless the server is not running then. It fails the test when the
// database cannot be created.
func (s *Server) CreateDatabase(tb testing.TB, name string) string {
	tb.Helper()
	db := fmt.Sprintf("%s_%d", dbName(name), s.dbs.Add(1))
	if err := s.exec("CREATE DATABASE " + pgx.Identifier{db}.Sanitize()); err != nil {
		tb.Fatalf("pgtest: create database %q: %v", db, err)
	}
	tb.Cleanup(func() {
		if !s.running() {
			return
		}
		if err := s.exec("DROP DATABASE IF EXISTS " + pgx.Identifier{db}.Sanitize() + " WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %q: %v", db, err)
		}
	})
	return s.DSN(db)
}

// exec runs one statement in the database "postgres".
func (s *Server) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, sql)
	if cerr := conn.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// dbName makes name a database name: lower case, a-z, 0-9 and '_' only,
// starting with a letter, at most 40 bytes (PostgreSQL truncates names
// past 63, and CreateDatabase appends a number).
func dbName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	n := b.String()
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "db_" + n
	}
	if len(n) > 40 {
		n = n[:40]
	}
	return n
}

// Pool returns a connection pool to dsn (pgxpool's defaults) that has
// connected once, and closes it when the test ends. It fails the test
// when dsn is invalid or the database does not answer. The pool is not
// tied to the server: after Kill or Restart, each of its connections to
// the old server fails when next used and is then replaced.
func (s *Server) Pool(tb testing.TB, dsn string) *pgxpool.Pool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		tb.Fatalf("pgtest: pool for %s: %v", dsn, err)
	}
	tb.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		tb.Fatalf("pgtest: pool for %s: %v", dsn, err)
	}
	return pool
}
