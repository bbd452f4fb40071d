package sink_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/sink"
	"github.com/sluice-go/sluice/sink/confluent"
	"github.com/sluice-go/sluice/testkit"
)

// A zero Producer value (not made by its constructor) is refused by
// sink.Produce with a build error; its DeadLetter, the destination's
// CheckStart and its Close must not panic either: they are called from
// main, outside any builder, where a panic is a crash of the program
// rather than an error naming the mistake.
func TestZeroProducerDeadLetterAndCloseDoNotPanic(t *testing.T) {
	for _, p := range []sink.Producer{&franz.Producer{}, &confluent.Producer{}, &testkit.Producer{}} {
		t.Run(fmt.Sprintf("%T", p), func(t *testing.T) {
			call := func(what string, f func() error) {
				t.Helper()
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s on a zero %T: panic: %v; want an error naming the mistake", what, p, r)
					}
				}()
				if err := f(); err == nil {
					t.Errorf("%s on a zero %T = nil; want an error naming the mistake", what, p)
				}
			}
			call("DeadLetter", func() error {
				dl := p.DeadLetter("dlq")
				return dl(context.Background(), sluice.DeadLetter{Err: errors.New("bad")})
			})
			call("DeadLetter.CheckStart", func() error {
				return p.DeadLetter("dlq").CheckStart(context.Background())
			})
			call("Close", p.Close)
		})
	}
}
