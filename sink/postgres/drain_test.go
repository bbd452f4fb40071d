package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
)

// The batch written at a graceful revoke fails for good (a trigger
// raises insufficient_privilege, SQLSTATE 42501: permanent): the revoke
// leaves the records uncommitted, none of the batch's rows is in the
// table, and the partition's final position, stored once the graph
// finished, stays before them, so that the next owner writes them.
func TestFailedDrainBatchIsNotStoredAsFinished(t *testing.T) {
	db := newDB(t, rowsDDL,
		`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.n >= 4 THEN RAISE EXCEPTION 'no' USING ERRCODE = '42501'; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER refuse BEFORE INSERT ON rows FOR EACH ROW EXECUTE FUNCTION refuse()`)
	cfg := config(true)
	cfg.Linger = time.Hour
	m := startMember(t, db, cfg, pipeline.WithRetry(sluice.RetryPolicy{Attempts: 1}))
	m.assign(t, values(0, 6)...)
	m.fake.WaitCommitted(t, topic, 0, 4) // 0..3: one full batch
	must(t, m.fake.Revoke(topic, 0))     // 4 and 5 are written at the drain, and refused for good
	_ = m.run.Stop(t)
	var next, written int64
	must(t, db.QueryRow(context.Background(), `SELECT next_offset, written_offset FROM sluice_offsets`).Scan(&next, &written))
	sameInts(t, "rows", ints(t, db), seq(0, 4))
	if next != 4 || written != 3 {
		t.Fatalf("stored next %d, written %d; want 4 and 3 (rows 4 and 5 were never written)", next, written)
	}
}
