package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice/sink/postgres"
)

// A partition lost while its batch's statement waits in the server (a
// COPY or an upsert blocked on a lock): the statement is cancelled and
// its connection goes back to a one-connection pool usable, so that the
// partition's claim at its next assignment, and its next batches, get
// it. Every row is then written once.
func TestAdversaryLostDuringABlockedStatement(t *testing.T) {
	for _, upsert := range []bool{false, true} {
		t.Run(map[bool]string{false: "copy", true: "upsert"}[upsert], func(t *testing.T) {
			ctx := context.Background()
			srv := pg.Get(t)
			dsn := srv.CreateDatabase(t, t.Name())
			admin := srv.Pool(t, dsn)
			exec(t, admin, keyedDDL)
			exec(t, admin, `CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_xact_lock_shared(4343); RETURN NEW; END $$`)
			exec(t, admin, `CREATE TRIGGER hold BEFORE INSERT ON rows FOR EACH ROW EXECUTE FUNCTION hold()`)
			cfg := config(true)
			if upsert {
				cfg.Conflict = []string{"n"}
			}
			m := startMember(t, poolOf(t, dsn, 1), cfg)

			holder, err := pgx.Connect(ctx, dsn)
			must(t, err)
			defer holder.Close(ctx)
			_, err = holder.Exec(ctx, "SELECT pg_advisory_lock($1)", advKey)
			must(t, err)
			must(t, m.fake.Send(topic, 0, values(0, 8)...))
			must(t, m.fake.Assign(topic, 0))
			waitAdvisory(t, holder)
			must(t, m.fake.Lose(topic, 0))
			must(t, m.fake.Assign(topic, 0)) // claims through the pool's one connection
			waitAdvisory(t, holder)
			_, err = holder.Exec(ctx, "SELECT pg_advisory_unlock($1)", advKey)
			must(t, err)
			m.fake.WaitCommitted(t, topic, 0, 8)
			must(t, m.run.Stop(t))
			sameInts(t, "rows", ints(t, admin), seq(0, 8))
		})
	}
}

// waitAdvisory polls until a session waits for the advisory lock.
func waitAdvisory(t *testing.T, holder *pgx.Conn) {
	t.Helper()
	poll(t, "a statement waiting for the advisory lock", func() bool {
		var n int
		err := holder.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&n)
		return err == nil && n > 0
	})
}

// One Writer serving two Runs of the group, one after the other: the
// second resumes where the first stored, and no row is written twice.
func TestAdversaryWriterReusedAcrossRuns(t *testing.T) {
	db := newDB(t, rowsDDL)
	w, err := postgres.New(db, config(true))
	must(t, err)
	for life := range 2 {
		m := startMemberWith(t, w)
		must(t, m.fake.Send(topic, 0, values(0, 10*(life+1))...))
		must(t, m.fake.Assign(topic, 0))
		m.fake.WaitCommitted(t, topic, 0, int64(10*(life+1)))
		must(t, m.run.Stop(t))
	}
	sameInts(t, "rows", ints(t, db), seq(0, 20))
}
