package follow_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/follow"
	"github.com/sluice-go/sluice/testkit/sourcetest"
)

// steppingLeaders lets 3 more offsets of every partition through at each
// read: the follower holds records, pauses and resumes all the time.
type steppingLeaders struct {
	mu    sync.Mutex
	reads int64
}

func (l *steppingLeaders) Committed(_ context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads++
	out := make(map[sluice.TopicPartition]int64, len(tps))
	for _, t := range tps {
		out[t] = 3 * l.reads
	}
	return out, nil
}

// followDriver is a sourcetest driver whose sources are followers of the
// fake driver's sources.
type followDriver struct {
	*sourcetest.FakeDriver
	leaders follow.Leaders
}

func (d followDriver) NewSource(t *testing.T, group, topic string) sluice.Source {
	src, err := follow.New(d.FakeDriver.NewSource(t, group, topic), d.leaders, follow.WithInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// A follower keeps the Source contract and ends every scenario with the
// same exact commits as the source it wraps: with leaders far ahead, and
// with leaders that advance a few offsets at a time.
func TestConformance(t *testing.T) {
	t.Run("LeadersAhead", func(t *testing.T) {
		ahead := follow.LeadersFunc(func(_ context.Context, tps []sluice.TopicPartition) (map[sluice.TopicPartition]int64, error) {
			out := map[sluice.TopicPartition]int64{}
			for _, t := range tps {
				out[t] = 1 << 62
			}
			return out, nil
		})
		sourcetest.Run(t, followDriver{sourcetest.NewFakeDriver(), ahead})
	})
	t.Run("LeadersStepping", func(t *testing.T) {
		sourcetest.Run(t, followDriver{sourcetest.NewFakeDriver(), &steppingLeaders{}})
	})
}
