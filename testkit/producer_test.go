package testkit_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// alertsTo builds a graph that produces every record's value, upper-cased,
// with its key and a header, to "alerts" with produce: the shape of a
// builder whose produce step is sink.Produce in the program.
func alertsTo(produce func(pipeline.Stream[sluice.Record]) pipeline.End) pipeline.Builder {
	return func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return produce(in)
	}
}

// startAlerts runs, over a Harness with opts, graphs producing every
// record with alertMsg to "alerts" on prod, and assigns orders/0.
func startAlerts(t *testing.T, prod *testkit.Producer, opts ...pipeline.Option) *testkit.Harness {
	h := testkit.New(t, alertsTo(func(in pipeline.Stream[sluice.Record]) pipeline.End {
		return sink.Produce(in, prod, "alerts", alertMsg)
	}), opts...)
	h.Assign("orders", 0)
	return h
}

func alertMsg(r sluice.Record) (sluice.Message, error) {
	if string(r.Value) == "bad" {
		return sluice.Message{}, sluice.Invalid(errors.New("cannot alert on this"))
	}
	return sluice.Message{Key: r.Key, Value: []byte(strings.ToUpper(string(r.Value))),
		Headers: []sluice.Header{{Key: "source-offset", Value: []byte{byte('0' + r.Offset)}}}}, nil
}

// Produce sends one message per value to the fake producer, in order,
// and the records commit once their messages were delivered.
func TestProduceRecordsEveryMessageInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		prod := testkit.NewProducer()
		h := startAlerts(t, prod)
		h.SendMessages("orders", 0, sluice.Message{Key: []byte("k1"), Value: []byte("a")}, sluice.Message{Value: []byte("b")})
		h.Send("orders", 0, []byte("c"))
		h.WaitCommitted("orders", 0, 3)
		stopClean(t, h)
		if got := prod.Values("alerts"); !slices.Equal(got, []string{"A", "B", "C"}) {
			t.Fatalf("produced %v, want [A B C]", got)
		}
		msgs := prod.Messages()
		if len(msgs) != 3 || msgs[0].Topic != "alerts" || string(msgs[0].Message.Key) != "k1" ||
			len(msgs[2].Message.Headers) != 1 || string(msgs[2].Message.Headers[0].Value) != "2" {
			t.Fatalf("produced %+v, want the key of offset 0 and the header of offset 2", msgs)
		}
		if prod.Len() != 3 || prod.Calls() != 3 {
			t.Fatalf("Len %d, Calls %d; want 3 and 3", prod.Len(), prod.Calls())
		}
	})
}

// A delivery FailWith fails stops Run, as a failed delivery does, naming
// the stage, the topic and the record; nothing from that record on
// commits and the failed message is not recorded.
func TestProducerFailWithStopsRunAtTheRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		prod := testkit.NewProducer()
		prod.FailWith(func(m testkit.Produced) error {
			if string(m.Message.Value) == "B" {
				return errors.New("broker unreachable")
			}
			return nil
		})
		h := testkit.New(t, alertsTo(func(in pipeline.Stream[sluice.Record]) pipeline.End {
			return sink.Produce(in, prod, "alerts", alertMsg, stages.Name("alert"))
		}))
		h.Assign("orders", 0)
		h.Send("orders", 0, []byte("a"), []byte("b"), []byte("c"))
		err := h.Wait()
		var se *sluice.StageError
		if !errors.As(err, &se) || se.Stage != "alert" || se.Offset != 1 ||
			!strings.Contains(err.Error(), "delivery to alerts failed: broker unreachable") {
			t.Fatalf("Run returned %v, want a StageError of alert at offset 1 naming the delivery", err)
		}
		if got := h.Committed("orders", 0); got != 1 {
			t.Fatalf("committed %d, want 1", got)
		}
		if got := prod.Values("alerts"); !slices.Contains(got, "A") || slices.Contains(got, "B") {
			t.Fatalf("produced %v, want A and not the failed B", got)
		}
	})
}

// An invalid toMsg error dead-letters the record, as in sink.Produce; the
// others are produced and everything commits.
func TestProduceInvalidMessageIsDeadLettered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		prod := testkit.NewProducer()
		dead := testkit.NewDeadLetters()
		h := startAlerts(t, prod, dead.Option())
		h.Send("orders", 0, []byte("a"), []byte("bad"), []byte("c"))
		h.WaitCommitted("orders", 0, 3)
		stopClean(t, h)
		if got := dead.Offsets("orders", 0); !slices.Equal(got, []int64{1}) {
			t.Fatalf("dead-lettered %v, want [1]", got)
		}
		if got := prod.Values("alerts"); !slices.Equal(got, []string{"A", "C"}) {
			t.Fatalf("produced %v, want [A C]", got)
		}
	})
}

// A nil producer or an empty topic fails the build naming the stage, as
// with sink.Produce.
func TestProduceWithBadArgumentsFailsTheBuild(t *testing.T) {
	for name, c := range map[string]struct {
		p     *testkit.Producer
		topic string
		want  string
	}{
		"nil producer": {nil, "alerts", "sink.Produce: the producer is nil"},
		"empty topic":  {testkit.NewProducer(), "", "sink.Produce: the topic is empty"},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := testkit.New(t, alertsTo(func(in pipeline.Stream[sluice.Record]) pipeline.End {
					return sink.Produce(in, c.p, c.topic, alertMsg)
				}))
				if err := h.Fake().Assign("orders", 0); err == nil {
					t.Fatal("the build succeeded")
				}
				err := h.Wait()
				var be *sluice.BuildError
				if !errors.As(err, &be) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Run returned %v, want a BuildError saying %q", err, c.want)
				}
			})
		})
	}
}

// Wait returns the messages once there are enough, and fails the test
// saying what it got when they never come.
func TestProducerWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		prod := testkit.NewProducer()
		h := startAlerts(t, prod)
		h.Send("orders", 0, []byte("a"), []byte("b"))
		if got := prod.Wait(t, 2); len(got) != 2 {
			t.Fatalf("Wait returned %d messages, want 2", len(got))
		}
		msg := runFailing(t, func(tb testing.TB) { prod.Wait(tb, 3) })
		if !strings.Contains(msg, "2 messages produced (2 sent)") || !strings.Contains(msg, "waiting for 3") {
			t.Fatalf("Wait failed with %q, want it to say what it got and waited for", msg)
		}
		stopClean(t, h)
	})
}

// Close is bounded as the Kafka producers' Close is (their close timeout
// plus at most two seconds), also while a FailWith function, which stands
// for the broker, holds a message in flight: a test that simulates a slow
// delivery that way and then closes the producer must see Close return
// (and the message given up on, or delivered), not hang.
func TestCloseIsBoundedWhileFailWithHoldsAMessage(t *testing.T) {
	// Not in a synctest bubble: Close waits on a mutex, which does not
	// let a bubble's clock advance.
	{
		prod := testkit.NewProducer()
		release := make(chan struct{})
		entered := make(chan struct{})
		prod.FailWith(func(testkit.Produced) error {
			close(entered)
			<-release // the broker is slow
			return nil
		})
		dlErr := make(chan error, 1)
		go func() {
			dlErr <- prod.DeadLetter("dlq")(context.Background(), sluice.DeadLetter{Record: sluice.Record{Topic: "in"}, Err: errors.New("bad")})
		}()
		<-entered
		closed := make(chan error, 1)
		start := time.Now()
		go func() { closed <- prod.Close() }()
		bound := time.NewTimer(5 * time.Second) // the Kafka producers' bound: close timeout + 2s
		defer bound.Stop()
		returned := false
		select {
		case <-closed:
			returned = true
		case <-bound.C:
			t.Errorf("Close still running after %v while a FailWith function held a message; want it bounded", time.Since(start))
		}
		close(release)
		if err := <-dlErr; err != nil && !errors.Is(err, sink.ErrClosed) {
			t.Errorf("DeadLetter while closing = %v, want nil (delivered) or an error wrapping sink.ErrClosed", err)
		}
		if !returned {
			<-closed
		}
		// Once closed, the producer refuses work with sink.ErrClosed.
		if err := prod.DeadLetter("dlq")(context.Background(), sluice.DeadLetter{Err: errors.New("bad")}); !errors.Is(err, sink.ErrClosed) {
			t.Errorf("DeadLetter after Close = %v, want sink.ErrClosed", err)
		}
	}
}
