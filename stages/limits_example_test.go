package stages_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit"
)

// overlap counts the calls running at once, in all and per key.
type overlap struct {
	mu          sync.Mutex
	now, most   int
	key, keyMax map[string]int
}

func (o *overlap) enter(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.key == nil {
		o.key, o.keyMax = map[string]int{}, map[string]int{}
	}
	o.now++
	o.most = max(o.most, o.now)
	o.key[key]++
	o.keyMax[key] = max(o.keyMax[key], o.key[key])
}

func (o *overlap) leave(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.now--
	o.key[key]--
}

// runPartitions runs build over partitions 0 and 1 of "orders", each
// holding values, until everything is committed.
func runPartitions(build pipeline.Builder, values ...string) {
	fake := testkit.NewFake()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- pipeline.Run(ctx, fake, build) }()
	for p := range int32(2) {
		for _, v := range values {
			_ = fake.Send("orders", p, []byte(v))
		}
	}
	_ = fake.Assign("orders", 0, 1)
	n := int64(len(values))
	for fake.Committed("orders", 0) < n || fake.Committed("orders", 1) < n {
		<-fake.Changed()
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Println("error:", err)
	}
}

// A Limiter created before Run bounds the calls of every partition
// together: Pool's 8 workers are 8 per partition, 16 for two partitions,
// but the scoring service never sees more than 3 calls at once.
func ExampleLimiter() {
	var calls overlap
	score := func(_ context.Context, r sluice.Record) (int, error) {
		calls.enter("")
		defer calls.leave("")
		time.Sleep(5 * time.Millisecond) // a remote call
		return len(r.Value), nil
	}
	scoring := stages.NewLimiter(3) // for the whole consumer
	runPartitions(func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.Pool(in, 8, score, scoring))
	}, "a", "b", "c", "d", "e", "f", "g", "h")
	fmt.Println("at most 3 calls at once:", calls.most <= 3)
	// Output:
	// at most 3 calls at once: true
}

// A KeyLock created before Run gives PoolByKey's one-call-at-a-time per
// key to the whole consumer: one account whose orders are on two
// partitions is never charged from both at once.
func ExampleKeyLock() {
	var calls overlap
	account := func(r sluice.Record) string { return strings.Split(string(r.Value), "/")[0] }
	charge := func(_ context.Context, r sluice.Record) (string, error) {
		calls.enter(account(r))
		defer calls.leave(account(r))
		time.Sleep(2 * time.Millisecond) // a remote call
		return string(r.Value), nil
	}
	accounts := stages.NewKeyLock() // for the whole consumer
	runPartitions(func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Discard(stages.PoolByKey(in, 4, account, charge, accounts))
	}, "alice/1", "bob/1", "alice/2", "bob/2", "alice/3")
	fmt.Println("calls at once for alice:", calls.keyMax["alice"], "for bob:", calls.keyMax["bob"])
	// Output:
	// calls at once for alice: 1 for bob: 1
}

// LockKey gives a KeyLock to a stage that has no key of its own (Map,
// FlatMap, Pool, Each), with the key of each value.
func ExampleLockKey() {
	var calls overlap
	account := func(r sluice.Record) string { return strings.Split(string(r.Value), "/")[0] }
	save := func(_ context.Context, r sluice.Record) error {
		calls.enter(account(r))
		defer calls.leave(account(r))
		time.Sleep(2 * time.Millisecond) // a write
		return nil
	}
	accounts := stages.NewKeyLock()
	runPartitions(func(p *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, save, stages.LockKey(accounts, account))
	}, "alice/1", "alice/2", "alice/3")
	fmt.Println("writes at once for alice:", calls.keyMax["alice"])
	// Output:
	// writes at once for alice: 1
}
