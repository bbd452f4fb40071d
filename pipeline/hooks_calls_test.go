package pipeline_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// completionLog records every OnRecordsCompleted call and whether two of
// them overlapped. Its first call waits for release.
type completionLog struct {
	release chan struct{}

	mu         sync.Mutex
	inside     int
	overlapped bool
	calls      [][2]int64 // n, next
}

func (c *completionLog) OnRecordsCompleted(_ sluice.TopicPartition, n int, next int64) {
	c.mu.Lock()
	c.inside++
	c.overlapped = c.overlapped || c.inside > 1
	c.calls = append(c.calls, [2]int64{int64(n), next})
	first := len(c.calls) == 1
	c.mu.Unlock()
	if first {
		<-c.release
	}
	c.mu.Lock()
	c.inside--
	c.mu.Unlock()
}

// OnRecordsCompleted calls for one partition come one at a time, with
// next increasing, even when records of the partition complete in two
// goroutines: offset 0 in the sink while the hook call reporting it is
// still running, offset 1 dropped by a filter in the meantime.
func TestRecordsCompletedOneAtATimeInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hook := &completionLog{release: make(chan struct{})}
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			kept := stages.Filter(in, func(r sluice.Record) bool { return string(r.Value) != "drop" })
			return stages.Each(kept, func(context.Context, sluice.Record) error { return nil })
		}, pipeline.WithHooks(hook))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("keep"))
		synctest.Wait() // offset 0 completed, its hook call waiting
		h.Send("t", 0, []byte("drop"))
		synctest.Wait() // offset 1 completed by the filter
		hook.mu.Lock()
		overlapped := hook.overlapped
		hook.mu.Unlock()
		if overlapped {
			t.Error("two OnRecordsCompleted calls for t/0 overlapped")
		}
		close(hook.release)
		h.WaitCommitted("t", 0, 2)
		stopClean(t, h)
		hook.mu.Lock()
		defer hook.mu.Unlock()
		if want := [][2]int64{{1, 1}, {1, 2}}; !slices.Equal(hook.calls, want) {
			t.Errorf("OnRecordsCompleted calls (n, next) = %v, want %v", hook.calls, want)
		}
	})
}

// inFlightLog keeps the last OnInFlight call. Its first OnRecordsDelivered
// call waits for release.
type inFlightLog struct {
	release chan struct{}
	once    sync.Once

	mu            sync.Mutex
	records, byts int64
}

func (l *inFlightLog) OnRecordsDelivered(sluice.TopicPartition, int) {
	l.once.Do(func() { <-l.release })
}

func (l *inFlightLog) OnInFlight(records, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records, l.byts = records, bytes
}

// The last OnInFlight call reports the totals as they are, though the
// admission that reports them comes after the records it admitted
// completed in their stage.
func TestInFlightLastCallIsCurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hook := &inFlightLog{release: make(chan struct{})}
		h := eachHarness(t, func(context.Context, sluice.Record) error { return nil }, pipeline.WithHooks(hook))
		h.Assign("t", 0)
		h.Send("t", 0, []byte("a"))
		synctest.Wait() // offset 0 completed; its admission's report waits
		close(hook.release)
		h.WaitCommitted("t", 0, 1)
		synctest.Wait()
		hook.mu.Lock()
		records, byts := hook.records, hook.byts
		hook.mu.Unlock()
		if records != 0 || byts != 0 {
			t.Errorf("last OnInFlight(%d, %d) with nothing in flight, want (0, 0)", records, byts)
		}
		stopClean(t, h)
	})
}
