package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

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
		h := testkit.New(t, func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
			return stages.Each(in, func(context.Context, sluice.Record) error { return nil })
		}, pipeline.WithHooks(hook))
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
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
	})
}
