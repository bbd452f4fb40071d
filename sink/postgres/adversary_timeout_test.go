package postgres_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit"
)

// statement_timeout set on the role, shorter than a batch's COPY but
// longer than one row's INSERT: the cancelled COPY is written row by row
// and commits, exactly once, with no row dead-lettered.
func TestAdversaryRoleStatementTimeout(t *testing.T) {
	srv := pg.Get(t)
	dsn := srv.CreateDatabase(t, t.Name())
	admin := srv.Pool(t, dsn)
	exec(t, admin, rowsDDL)
	exec(t, admin, `CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(0.03); RETURN NEW; END $$`)
	exec(t, admin, `CREATE TRIGGER slow BEFORE INSERT ON rows FOR EACH ROW EXECUTE FUNCTION slow()`)
	exec(t, admin, `CREATE ROLE slowpoke LOGIN SUPERUSER`)
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
	cfg, err := pgx.ParseConfig(dsn)
	must(t, err)
	cfg.User = "slowpoke"
	db := poolOf(t, pgxConnString(cfg), 4)
	dl := testkit.NewDeadLetters()
	m := startMember(t, db, config(true), dl.Option(), pipeline.WithRetry(sluice.RetryPolicy{Attempts: 3}))
	must(t, m.fake.Send(topic, 0, values(0, 12)...))
	must(t, m.fake.Assign(topic, 0))
	m.fake.WaitCommitted(t, topic, 0, 12)
	must(t, m.run.Stop(t))
	sameInts(t, "rows", ints(t, admin), seq(0, 12))
	if dl.Len() != 0 {
		t.Fatalf("%d dead letters; want none", dl.Len())
	}
}

func pgxConnString(c *pgx.ConnConfig) string {
	return "postgres://" + c.User + "@" + c.Host + ":" + itoa(int(c.Port)) + "/" + c.Database + "?sslmode=disable"
}

func itoa(n int) string { return strconv.Itoa(n) }
