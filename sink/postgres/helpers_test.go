package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/postgres"
	"github.com/sluice-go/sluice/sink/txsink"
	"github.com/sluice-go/sluice/sink/txsink/txsinktest"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

const (
	topic = "events"
	group = "g"
)

// Tables of the tests: rows has no unique key, so that a row written
// twice shows; keyed has one, for upserts. Both refuse a negative n and
// a v longer than 8 characters.
const (
	rowsDDL  = `CREATE TABLE rows (n integer NOT NULL CONSTRAINT rows_n_check CHECK (n >= 0), v varchar(8))`
	keyedDDL = `CREATE TABLE rows (n integer PRIMARY KEY CONSTRAINT rows_n_check CHECK (n >= 0), v varchar(8))`
)

// newDB creates a database of the test's own on the shared server, runs
// ddl in it and returns a pool to it.
func newDB(t *testing.T, ddl ...string) *pgxpool.Pool {
	t.Helper()
	_, db := newDatabase(t, ddl...)
	return db
}

// newDatabase is newDB that returns the database's DSN too, for the
// tests that open connections of their own.
func newDatabase(t *testing.T, ddl ...string) (string, *pgxpool.Pool) {
	t.Helper()
	srv := pg.Get(t)
	dsn := srv.CreateDatabase(t, t.Name())
	pool := srv.Pool(t, dsn)
	for _, stmt := range ddl {
		exec(t, pool, stmt)
	}
	return dsn, pool
}

// poolOf returns a pool to dsn of at most maxConns connections, closed
// when the test ends.
func poolOf(t *testing.T, dsn string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	must(t, err)
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	must(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func exec(t *testing.T, db *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// ints returns the n of every row of the table rows, sorted, duplicates
// kept.
func ints(t *testing.T, db *pgxpool.Pool) []int {
	t.Helper()
	return intsOf(t, db, "rows")
}

// intsOf is ints of another table.
func intsOf(t *testing.T, db *pgxpool.Pool, table string) []int {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT n FROM `+table+` ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameInts fails t unless got holds exactly want, in any order, each as
// often; seq returns the numbers from through to-1.
var sameInts, seq = txsinktest.SameRows, txsinktest.Numbers

// values returns the record values "from" .. "from+n-1".
func values(from, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(strconv.Itoa(from + i))
	}
	return out
}

func bytesOf(vs ...string) [][]byte {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = []byte(v)
	}
	return out
}

// toRow is the graph before the Writer. A record's value is "n" (the row
// n, "v<n>") or "n=v"; a few values make rows PostgreSQL or pgx refuse:
// "text:s" puts the string s in the integer column, "chan" a Go channel
// (pgx encodes none), "short" a row of one value for two columns.
func toRow(_ context.Context, r sluice.Record) (postgres.Row, error) {
	s := string(r.Value)
	switch {
	case s == "chan":
		return postgres.Row{make(chan int), "c"}, nil
	case s == "short":
		return postgres.Row{7}, nil
	case strings.HasPrefix(s, "text:"):
		return postgres.Row{strings.TrimPrefix(s, "text:"), "t"}, nil
	}
	num, v, ok := strings.Cut(s, "=")
	n, err := strconv.Atoi(num)
	if err != nil {
		return nil, err
	}
	if !ok {
		v = "v" + num
	}
	return postgres.Row{n, v}, nil
}

// config is the sink of the table rows, in small batches.
func config(eos bool) postgres.Config {
	return postgres.Config{
		Table:              "rows",
		Columns:            []string{"n", "v"},
		ExactlyOnce:        eos,
		CreateOffsetsTable: eos,
		BatchSize:          4,
		Linger:             5 * time.Millisecond,
	}
}

// member is one consumer of the group: a Fake source whose offset store
// is w in exactly-once mode, running a graph that ends in w.
type member struct {
	fake *testkit.Fake
	run  *testkit.Running
	w    *txsink.Writer[postgres.Row]
}

// startMember starts a member of the Writer of cfg on db, whose graph
// maps each record with toRow.
func startMember(t *testing.T, db postgres.DB, cfg postgres.Config, opts ...pipeline.Option) *member {
	t.Helper()
	w, err := postgres.New(db, cfg)
	must(t, err)
	return runWriter(t, w, cfg.ExactlyOnce, toRow, opts...)
}

// runWriter starts a member whose graph maps each record with row and
// ends in w, which is the source's offset store when eos.
func runWriter(t *testing.T, w *txsink.Writer[postgres.Row], eos bool, row func(context.Context, sluice.Record) (postgres.Row, error), opts ...pipeline.Option) *member {
	t.Helper()
	f := testkit.NewFake()
	if eos {
		f.UseOffsetStore(w, group)
	}
	r := testkit.Start(t, f, func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return w.Write(stages.Map(in, row))
	}, opts...)
	return &member{fake: f, run: r, w: w}
}

// assign sends log to partition 0 and assigns it to the member.
func (m *member) assign(t *testing.T, log ...[]byte) {
	t.Helper()
	must(t, m.fake.Send(topic, 0, log...))
	must(t, m.fake.Assign(topic, 0))
}

// finish waits until the member committed partition 0 up to offset n,
// and stops it.
func (m *member) finish(t *testing.T, n int) {
	t.Helper()
	m.fake.WaitCommitted(t, topic, 0, int64(n))
	must(t, m.run.Stop(t))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// logWatch is a slog.Handler that closes a channel at the first record
// whose message contains a string.
type logWatch struct {
	substr string
	once   *sync.Once
	seen   chan struct{}
}

func newLogWatch(substr string) logWatch {
	return logWatch{substr: substr, once: new(sync.Once), seen: make(chan struct{})}
}

func (l logWatch) Logger() *slog.Logger                     { return slog.New(l) }
func (l logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (l logWatch) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l logWatch) WithGroup(string) slog.Handler            { return l }
func (l logWatch) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, l.substr) {
		l.once.Do(func() { close(l.seen) })
	}
	return nil
}

// waitLimit bounds the tests' waits for what the database or the
// Writer's log tells.
const waitLimit = 30 * time.Second

// wait blocks until the message was logged, failing the test after
// waitLimit.
func (l logWatch) wait(t *testing.T) {
	t.Helper()
	select {
	case <-l.seen:
	case <-time.After(waitLimit):
		t.Fatalf("no log message containing %q within %v", l.substr, waitLimit)
	}
}

// poll calls cond until it returns true, failing the test after
// waitLimit: for state only the database can tell (a session waiting
// for a lock).
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v", what, waitLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holdKey is the advisory lock a test holds (holdLock) to stop a batch's
// transaction where a trigger function of holdFunc waits for it.
const holdKey = 4343

// holdInserts makes the trigger function hold run before each insert
// into rows.
const holdInserts = `CREATE TRIGGER hold BEFORE INSERT ON rows FOR EACH ROW EXECUTE FUNCTION hold()`

// holdFunc is the DDL of the trigger function hold(): for a row where
// cond holds, it waits while another session holds the advisory lock
// holdKey; it returns ret.
func holdFunc(cond, ret string) string {
	return fmt.Sprintf(`CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF %s THEN PERFORM pg_advisory_xact_lock_shared(%d); END IF; RETURN %s; END $$`, cond, holdKey, ret)
}

// holdLock takes the advisory lock holdKey on a session of its own to
// dsn's database, which it returns; the session ends with the test.
func holdLock(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, dsn)
	must(t, err)
	t.Cleanup(func() { _ = holder.Close(context.Background()) })
	_, err = holder.Exec(ctx, "SELECT pg_advisory_lock($1)", holdKey)
	must(t, err)
	return holder
}

// waitAdvisory polls until a session of holder's database waits for an
// advisory lock.
func waitAdvisory(t *testing.T, holder *pgx.Conn) {
	t.Helper()
	poll(t, "a statement waiting for the advisory lock", func() bool {
		var n int
		err := holder.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&n)
		return err == nil && n > 0
	})
}
