package postgres_test

import (
	"testing"
)

// Pools of one connection: several partitions' transactions, the final
// positions of a revoke and another member's claims share it without
// deadlocking, and every row is written once.
func TestOneConnectionPoolsDoNotDeadlock(t *testing.T) {
	dsn, admin := newDatabase(t, rowsDDL)
	a := startMember(t, poolOf(t, dsn, 1), config(true))
	b := startMember(t, poolOf(t, dsn, 1), config(true))
	for p := range int32(4) {
		must(t, a.fake.Send(topic, p, values(int(p)*100, 20)...))
		must(t, b.fake.Send(topic, p, values(int(p)*100, 40)...))
	}
	must(t, a.fake.Assign(topic, 0, 1, 2, 3))
	for p := range int32(4) {
		a.fake.WaitCommitted(t, topic, p, 20)
	}
	for p := range int32(4) {
		must(t, a.fake.Send(topic, p, values(int(p)*100+20, 20)...))
	}
	must(t, b.fake.Assign(topic, 2, 3)) // fences a on 2 and 3
	must(t, a.fake.Lose(topic, 2, 3))
	must(t, a.fake.Revoke(topic, 1))
	must(t, b.fake.Assign(topic, 1))
	a.fake.WaitCommitted(t, topic, 0, 40)
	// One more record each on b, which resumes where the table says (a
	// may have written all 40 already): b's commits then show it is done.
	for p := range int32(3) {
		must(t, b.fake.Send(topic, p+1, values(int(p+1)*100+40, 1)...))
		b.fake.WaitCommitted(t, topic, p+1, 41)
	}
	must(t, a.run.Stop(t))
	must(t, b.run.Stop(t))
	want := seq(0, 40)
	for p := 1; p < 4; p++ {
		want = append(want, seq(p*100, p*100+41)...)
	}
	sameInts(t, "rows", ints(t, admin), want)
}
