package postgres_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink/postgres"
	"github.com/sluice-go/sluice/testkit"
)

// At least once: every record's row is written and the offsets commit
// once their rows did, exactly at the end of the log.
func TestAtLeastOnceWritesEveryRowThenCommits(t *testing.T) {
	db := newDB(t, rowsDDL)
	m := startMember(t, db, config(false))
	must(t, m.fake.Send(topic, 0, values(0, 10)...))
	must(t, m.fake.Send(topic, 1, values(10, 3)...))
	must(t, m.fake.Assign(topic, 0, 1))
	m.fake.WaitCommitted(t, topic, 0, 10)
	m.fake.WaitCommitted(t, topic, 1, 3)
	must(t, m.run.Stop(t))
	sameInts(t, "rows", ints(t, db), seq(0, 13))
	if c0, c1 := m.fake.Committed(topic, 0), m.fake.Committed(topic, 1); c0 != 10 || c1 != 3 {
		t.Fatalf("committed offsets %d and %d; want 10 and 3", c0, c1)
	}
}

// Exactly once across a restart: the second member resumes where the
// offsets table says, not where the group's commit says, and each row is
// in the table once.
func TestExactlyOnceResumesFromTheTableNotTheGroup(t *testing.T) {
	db := newDB(t, rowsDDL)
	m1 := startMember(t, db, config(true))
	m1.assign(t, values(0, 10)...)
	m1.finish(t, 10)

	m2 := startMember(t, db, config(true))
	must(t, m2.fake.Send(topic, 0, values(0, 15)...))
	must(t, m2.fake.SetCommitted(topic, 0, 0)) // the group's commit was lost
	must(t, m2.fake.Assign(topic, 0))
	m2.fake.WaitCommitted(t, topic, 0, 15)
	if got := m2.fake.Delivered(topic, 0); got != 5 {
		t.Fatalf("the second member was delivered %d records; want 5 (from the table's offset 10)", got)
	}
	must(t, m2.run.Stop(t))
	sameInts(t, "rows", ints(t, db), seq(0, 15))
	var next, written int64
	must(t, db.QueryRow(context.Background(), `SELECT next_offset, written_offset FROM sluice_offsets
WHERE consumer_group = $1 AND topic = $2 AND partition = 0`, group, topic).Scan(&next, &written))
	if next != 15 || written != 14 {
		t.Fatalf("stored position next %d, written %d; want 15 and 14", next, written)
	}
}

// A member whose partition another member claimed (a zombie) cannot
// write or commit: its transaction is rolled back, its committed offset
// stays, and the new owner writes each row once.
func TestZombieIsFencedByTheNextClaim(t *testing.T) {
	db := newDB(t, rowsDDL)
	fenced := newLogWatch("claimed by another member")
	cfgA := config(true)
	cfgA.Logger = fenced.Logger()
	a := startMember(t, db, cfgA)
	a.assign(t, values(0, 5)...)
	a.fake.WaitCommitted(t, topic, 0, 5)

	b := startMember(t, db, config(true))
	must(t, b.fake.Send(topic, 0, values(0, 10)...))
	must(t, b.fake.Assign(topic, 0)) // claims: a is fenced from here on
	b.fake.WaitCommitted(t, topic, 0, 10)

	must(t, a.fake.Send(topic, 0, values(5, 5)...)) // a still believes it owns the partition
	fenced.wait(t)
	sameInts(t, "rows", ints(t, db), seq(0, 10))
	if got := a.fake.Committed(topic, 0); got != 5 {
		t.Fatalf("the fenced member committed offset %d; want 5 (nothing after the claim)", got)
	}
	must(t, a.fake.Lose(topic, 0)) // as the group would take it away
	must(t, a.run.Stop(t))
	must(t, b.run.Stop(t))
}

// Rows PostgreSQL or pgx refuse are dead-lettered, with an error naming
// the table (and the constraint); the rest of their batch commits. Each
// refused row is in a batch of its own, between two rows accepted.
func TestRefusedRowsAreDeadLetteredAndTheRestCommits(t *testing.T) {
	bad := []struct {
		value string
		want  []string // in the dead letter's error
	}{
		{"-2", []string{`"rows"`, "rows_n_check", "23514"}},         // a CHECK constraint
		{"3=toolongvalue", []string{`"rows"`, "22001"}},             // varchar(8)
		{"text:abc", []string{`"rows"`, "22P02"}},                   // text into the integer column
		{"chan", []string{`"rows"`, "unable to encode"}},            // a value pgx cannot encode
		{"short", []string{`"rows"`, "1 values for the 2 columns"}}, // the wrong number of values
	}
	for _, mode := range []struct {
		name string
		eos  bool
		ddl  string
		conf []string
	}{
		{"at least once", false, rowsDDL, nil},
		{"exactly once", true, rowsDDL, nil},
		{"upsert", false, keyedDDL, []string{"n"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			db := newDB(t, mode.ddl)
			dl := testkit.NewDeadLetters()
			cfg := config(mode.eos)
			cfg.BatchSize, cfg.Conflict = 3, mode.conf
			m := startMember(t, db, cfg, dl.Option())
			var log []string
			var want []int
			for i, b := range bad {
				log = append(log, strconv.Itoa(10*i), b.value, strconv.Itoa(10*i+1))
				want = append(want, 10*i, 10*i+1)
			}
			m.assign(t, bytesOf(log...)...)
			m.finish(t, len(log))
			sameInts(t, "rows", ints(t, db), want)
			letters := dl.Records()
			if len(letters) != len(bad) {
				t.Fatalf("%d dead letters; want %d", len(letters), len(bad))
			}
			for i, l := range letters {
				if l.Record.Offset != int64(3*i+1) {
					t.Fatalf("dead letter %d is of offset %d; want %d", i, l.Record.Offset, 3*i+1)
				}
				for _, w := range bad[i].want {
					if !strings.Contains(l.Err.Error(), w) {
						t.Errorf("dead letter of %q: error %q does not name %s", bad[i].value, l.Err, w)
					}
				}
			}
		})
	}
}

// A constraint checked at commit (DEFERRABLE INITIALLY DEFERRED) refuses
// rows as one checked at once does: they are dead-lettered and the rest
// of their batch commits.
func TestDeferredConstraintViolationIsDeadLettered(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(map[bool]string{false: "at least once", true: "exactly once"}[eos], func(t *testing.T) {
			db := newDB(t,
				`CREATE TABLE parents (id integer PRIMARY KEY)`,
				`INSERT INTO parents SELECT generate_series(0, 9)`,
				`CREATE TABLE rows (n integer NOT NULL CONSTRAINT rows_parent REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED, v varchar(8))`)
			dl := testkit.NewDeadLetters()
			m := startMember(t, db, config(eos), dl.Option(), pipeline.WithRetry(sluice.RetryPolicy{Attempts: 2}))
			m.assign(t, bytesOf("1", "42", "2", "3", "4", "5")...)
			m.finish(t, 6)
			sameInts(t, "rows", ints(t, db), []int{1, 2, 3, 4, 5})
			if got := dl.Offsets(topic, 0); len(got) != 1 || got[0] != 1 {
				t.Fatalf("dead letters at offsets %v; want [1]", got)
			}
			wantIn(t, dl.Records()[0].Err, `"rows"`, "rows_parent", "23503")
		})
	}
}

// One Writer serving two Runs of the group, one after the other: the
// second resumes where the first stored, and no row is written twice.
func TestWriterReusedAcrossRunsResumesWhereItStored(t *testing.T) {
	db := newDB(t, rowsDDL)
	w, err := postgres.New(db, config(true))
	must(t, err)
	for life := range 2 {
		m := runWriter(t, w, true, toRow)
		m.assign(t, values(0, 10*(life+1))...)
		m.finish(t, 10*(life+1))
	}
	sameInts(t, "rows", ints(t, db), seq(0, 20))
}
