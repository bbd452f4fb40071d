package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/postgres"
)

// advKey is the advisory lock the adversary tests hold to stop a batch's
// transaction at a chosen point.
const advKey = 4343

// The server is killed (SIGKILL, a crash) while an exactly-once batch's
// transaction is stopped at one point of its life; once the server is
// back, every record's row is in the table once and the group commits
// the end of the log.
func TestAdversaryKillAtEveryPointOfABatch(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the server")
	}
	points := []struct {
		name string
		ddl  []string
	}{
		{name: "during COPY", ddl: []string{
			`CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.n >= 4 THEN PERFORM pg_advisory_xact_lock_shared(4343); END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER hold BEFORE INSERT ON rows FOR EACH ROW EXECUTE FUNCTION hold()`,
		}},
		{name: "between StoreOffset and COMMIT", ddl: []string{
			postgres.OffsetsDDL(""),
			`CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.next_offset <> OLD.next_offset AND NEW.next_offset > 4 THEN PERFORM pg_advisory_xact_lock_shared(4343); END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER hold AFTER UPDATE ON sluice_offsets FOR EACH ROW EXECUTE FUNCTION hold()`,
		}},
		{name: "during COMMIT (deferred trigger)", ddl: []string{
			`CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.n >= 4 THEN PERFORM pg_advisory_xact_lock_shared(4343); END IF; RETURN NULL; END $$`,
			`CREATE CONSTRAINT TRIGGER hold AFTER INSERT ON rows DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION hold()`,
		}},
	}
	for _, pt := range points {
		t.Run(pt.name, func(t *testing.T) {
			ctx := context.Background()
			srv := pg.Get(t)
			dsn := srv.CreateDatabase(t, t.Name())
			db := srv.Pool(t, dsn)
			exec(t, db, rowsDDL)
			for _, s := range pt.ddl {
				exec(t, db, s)
			}
			retry := pipeline.WithRetry(sluice.RetryPolicy{Attempts: 200, Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond})
			m := startMember(t, db, config(true), retry)
			must(t, m.fake.Send(topic, 0, values(0, 4)...))
			must(t, m.fake.Assign(topic, 0))
			m.fake.WaitCommitted(t, topic, 0, 4)

			holder, err := pgx.Connect(ctx, dsn)
			must(t, err)
			_, err = holder.Exec(ctx, "SELECT pg_advisory_lock($1)", advKey)
			must(t, err)
			must(t, m.fake.Send(topic, 0, values(4, 8)...))
			poll(t, "a batch waiting for the advisory lock", func() bool {
				var n int
				err := holder.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&n)
				return err == nil && n > 0
			})
			must(t, srv.Kill())
			_ = holder.Close(ctx)
			srv.Restart(t)
			m.fake.WaitCommitted(t, topic, 0, 12)
			must(t, m.run.Stop(t))
			sameInts(t, "rows", intsAfterRestart(t, dsn), seq(0, 12))
		})
	}
}

// The server is killed while a COMMIT waits for a synchronous standby:
// the commit is durable locally (it survives the crash) but its reply is
// lost, and the read-back fails while the server is down. Once it is
// back, the batch must be found committed, not written again.
func TestAdversaryKillWhileCommitWaitsForStandby(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the server")
	}
	ctx := context.Background()
	srv := pg.Get(t)
	dsn := srv.CreateDatabase(t, t.Name())
	db := srv.Pool(t, dsn)
	exec(t, db, rowsDDL)
	retry := pipeline.WithRetry(sluice.RetryPolicy{Attempts: 200, Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond})
	m := startMember(t, db, config(true), retry)
	must(t, m.fake.Send(topic, 0, values(0, 4)...))
	must(t, m.fake.Assign(topic, 0))
	m.fake.WaitCommitted(t, topic, 0, 4)

	syncStandby(t, srv, "nobody")
	t.Cleanup(func() { syncStandby(t, srv, "") })
	must(t, m.fake.Send(topic, 0, values(4, 4)...))
	poll(t, "a commit waiting for the synchronous standby", func() bool {
		var pid int
		return db.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND wait_event = 'SyncRep'`).Scan(&pid) == nil
	})
	// Reset the setting for the restarted server, without a reload: the
	// waiting commit keeps waiting until the kill.
	conn, err := pgx.Connect(ctx, srv.DSN("postgres"))
	must(t, err)
	_, err = conn.Exec(ctx, "ALTER SYSTEM RESET synchronous_standby_names")
	must(t, err)
	_ = conn.Close(ctx)
	must(t, srv.Kill())
	srv.Restart(t)
	m.fake.WaitCommitted(t, topic, 0, 8)
	must(t, m.run.Stop(t))
	sameInts(t, "rows", intsAfterRestart(t, dsn), seq(0, 8))
}
