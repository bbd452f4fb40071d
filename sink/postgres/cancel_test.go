package postgres_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// A partition lost while its batch's statement waits in the server (a
// COPY or an upsert blocked on a lock): the statement is cancelled and
// its connection goes back to a one-connection pool usable, so that the
// partition's claim at its next assignment, and its next batches, get
// it. Every row is then written once.
func TestLossCancelsABlockedStatementAndFreesItsConnection(t *testing.T) {
	for _, upsert := range []bool{false, true} {
		t.Run(map[bool]string{false: "copy", true: "upsert"}[upsert], func(t *testing.T) {
			dsn, admin := newDatabase(t, keyedDDL, holdFunc("true", "NEW"), holdInserts)
			cfg := config(true)
			if upsert {
				cfg.Conflict = []string{"n"}
			}
			m := startMember(t, poolOf(t, dsn, 1), cfg)

			holder := holdLock(t, dsn)
			m.assign(t, values(0, 8)...)
			waitAdvisory(t, holder)
			must(t, m.fake.Lose(topic, 0))
			must(t, m.fake.Assign(topic, 0)) // claims through the pool's one connection
			waitAdvisory(t, holder)
			_, err := holder.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", holdKey)
			must(t, err)
			m.finish(t, 8)
			sameInts(t, "rows", ints(t, admin), seq(0, 8))
		})
	}
}

// statement_timeout set on the role, shorter than a batch's COPY but
// longer than one row's INSERT: the cancelled COPY is written row by row
// and commits, exactly once, with no row dead-lettered.
func TestStatementTimeoutOnACopyWritesRowByRow(t *testing.T) {
	dsn, admin := newDatabase(t, rowsDDL,
		`CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(0.03); RETURN NEW; END $$`,
		`CREATE TRIGGER slow BEFORE INSERT ON rows FOR EACH ROW EXECUTE FUNCTION slow()`,
		`CREATE ROLE slowpoke LOGIN SUPERUSER`)
	// A role is the server's, not the database's: it is dropped, with what
	// it owns (the offsets table it created), so that the next run of the
	// test on the same server can create it again.
	t.Cleanup(func() {
		for _, q := range []string{`DROP OWNED BY slowpoke`, `DROP ROLE slowpoke`} {
			if _, err := admin.Exec(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	exec(t, admin, `ALTER ROLE slowpoke SET statement_timeout = '80ms'`)
	u, err := url.Parse(dsn)
	must(t, err)
	u.User = url.User("slowpoke")
	dl := testkit.NewDeadLetters()
	m := startMember(t, poolOf(t, u.String(), 4), config(true), dl.Option(), pipeline.WithRetry(sluice.RetryPolicy{Attempts: 3}))
	m.assign(t, values(0, 12)...)
	m.finish(t, 12)
	sameInts(t, "rows", ints(t, admin), seq(0, 12))
	if dl.Len() != 0 {
		t.Fatalf("%d dead letters; want none", dl.Len())
	}
}
