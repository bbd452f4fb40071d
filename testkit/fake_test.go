package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

func TestSendRecordsRejectsOffsetsThatDoNotIncrease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, discard)
		h.Send("t", 0, []byte("a"), []byte("b")) // offsets 0, 1
		err := h.Fake().SendRecords(sluice.Record{Topic: "t", Offset: 5}, sluice.Record{Topic: "t", Offset: 1})
		if err == nil || !strings.Contains(err.Error(), "t/0 at offset 1 does not follow offset 5") {
			t.Fatalf("SendRecords returned %v", err)
		}
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 2)
		synctest.Wait()
		if got := h.Committed("t", 0); got != 2 {
			t.Fatalf("committed %d: the rejected records must not have been appended", got)
		}
	})
}

func TestReassignRedeliversFromTheCommittedOffset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []int64
		h := testkit.New(t, collectOffsets(&seen))
		h.Send("t", 0, []byte("a"), []byte("b"))
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 2)
		h.Revoke("t", 0)
		h.Send("t", 0, []byte("c"))
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 3)
		stopClean(t, h)
		if len(seen) != 3 || seen[2] != 2 {
			t.Fatalf("saw offsets %v, want [0 1 2]", seen)
		}
	})
}

func TestControlAfterStopReportsErrStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := testkit.New(t, discard)
		stopClean(t, h)
		if err := h.Fake().Send("t", 0, []byte("x")); !errors.Is(err, testkit.ErrStopped) {
			t.Fatalf("Send after Stop returned %v, want ErrStopped", err)
		}
		if err := h.Stop(); err != nil {
			t.Fatalf("second Stop returned %v", err)
		}
	})
}

// Assigning a partition the consumer owns already changes nothing: its
// records are not delivered again to the same graph, its pause is kept.
func TestAssignOfAnOwnedPartitionIsANoOp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var seen []int64
		builds := 0
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			builds++
			return stages.Each(in, func(ctx context.Context, r sluice.Record) error {
				if r.Offset == 5 {
					select {
					case <-release:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				seen = append(seen, r.Offset)
				return nil
			})
		}, pipeline.WithPartitionQueue(3))
		h.Send("t", 0, testkit.Values(8)...)
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 5) // offsets 5 to 7 are in flight
		synctest.Wait()
		delivered := h.Fake().Delivered("t", 0)
		h.Assign("t", 0)
		synctest.Wait()
		if got := h.Fake().Delivered("t", 0); got != delivered {
			t.Fatalf("delivered %d records after the second Assign, %d before: the partition was delivered again", got, delivered)
		}
		close(release)
		h.WaitCommitted("t", 0, 8)
		stopClean(t, h)
		if fmt.Sprint(seen) != "[0 1 2 3 4 5 6 7]" || builds != 1 {
			t.Fatalf("processed %v with %d graphs, want [0 1 2 3 4 5 6 7] once, one graph", seen, builds)
		}
	})
}

// SetCommitted moves where the next assignment starts, as a commit by
// another member would; it refuses a partition the consumer owns.
func TestSetCommittedStartsTheNextAssignmentThere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []int64
		h := testkit.New(t, collectOffsets(&seen))
		h.Send("t", 0, testkit.Values(6)...)
		if err := h.Fake().SetCommitted("t", 0, 4); err != nil {
			t.Fatal(err)
		}
		if c := h.Committed("t", 0); c != 4 {
			t.Fatalf("committed %d after SetCommitted(4)", c)
		}
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 6)
		err := h.Fake().SetCommitted("t", 0, 1)
		if err == nil || !strings.Contains(err.Error(), "t/0") || !strings.Contains(err.Error(), "owns the partition") {
			t.Fatalf("SetCommitted of an owned partition returned %v, want an error naming it", err)
		}
		if err := h.Fake().SetCommitted("t", 1, -1); err == nil || !strings.Contains(err.Error(), "t/1, -1") {
			t.Fatalf("SetCommitted(-1) returned %v, want an error naming the offset", err)
		}
		stopClean(t, h)
		if fmt.Sprint(seen) != "[4 5]" {
			t.Fatalf("processed %v, want [4 5]: delivery starts at the offset set", seen)
		}
	})
}

// A Fake runs once: a second Run returns an error at once instead of
// running without anything reaching it.
func TestFakeRunTwiceReturnsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := testkit.NewFake()
		first := testkit.Start(t, fake, discard)
		if err := fake.Assign("t", 0); err != nil {
			t.Fatal(err)
		}
		if err := first.Stop(t); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- pipeline.Run(ctx, fake, discard) }()
		synctest.Wait()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "a Fake runs once") {
				t.Fatalf("the second Run returned %v, want an error saying a Fake runs once", err)
			}
		default:
			cancel()
			<-done
			t.Fatal("the second Run kept running on a used Fake")
		}
	})
}

// SendRecords numbers records whose Offset is 0 after their partition's
// last record; given offsets are kept (gaps allowed).
func TestSendRecordsNumbersZeroOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []string
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				got = append(got, fmt.Sprintf("%d:%s@%d", r.Partition, r.Value, r.Offset))
				return nil
			})
		})
		h.SendRecords(
			sluice.Record{Topic: "t", Value: []byte("a")},
			sluice.Record{Topic: "t", Value: []byte("b")},
			sluice.Record{Topic: "t", Partition: 1, Value: []byte("x")},
			sluice.Record{Topic: "t", Value: []byte("c"), Offset: 10},
			sluice.Record{Topic: "t", Value: []byte("d")},
		)
		h.Send("t", 0, []byte("e"))
		h.SendRecords(sluice.Record{Topic: "t", Value: []byte("f")})
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 14)
		stopClean(t, h)
		want := []string{"0:a@0", "0:b@1", "0:c@10", "0:d@11", "0:e@12", "0:f@13"}
		if !slices.Equal(got, want) {
			t.Fatalf("processed %v, want %v", got, want)
		}
	})
}

// SendMessages appends records with their keys and headers.
func TestSendMessagesKeepsKeysAndHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []sluice.Record
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(_ context.Context, r sluice.Record) error {
				got = append(got, r)
				return nil
			})
		})
		h.Send("t", 0, []byte("first"))
		h.SendMessages("t", 0, sluice.Message{Key: []byte("k"), Value: []byte("v"),
			Headers: []sluice.Header{{Key: "trace-id", Value: []byte("abc")}}})
		h.Assign("t", 0)
		h.WaitCommitted("t", 0, 2)
		stopClean(t, h)
		r := got[1]
		if len(got) != 2 || r.Offset != 1 || string(r.Key) != "k" || string(r.Value) != "v" ||
			len(r.Headers) != 1 || r.Headers[0].Key != "trace-id" || string(r.Headers[0].Value) != "abc" {
			t.Fatalf("got %+v, want the second record at offset 1 with its key and header", got)
		}
	})
}
