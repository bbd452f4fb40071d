package follow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice"
)

// Source is a [sluice.Source] that runs another source and delivers a
// record of partition (T, p) at offset o to the runtime only once every
// leader group has committed an offset above o on (T, p), as [Leaders]
// reads it. Create it with [New]; its Run may be called once.
type Source struct {
	inner   sluice.Source
	leaders Leaders
	cfg     config
	started atomic.Bool
}

var _ sluice.Source = (*Source)(nil)

// New returns a follower running inner, gated by leaders. inner is any
// source (source.NewSource, franz.NewSource, testkit.NewFake): its group
// is the follower's own consumer group, which must not be one of the
// leader groups (it would wait for itself forever). New returns an error
// naming a nil argument or an invalid option.
func New(inner sluice.Source, leaders Leaders, opts ...Option) (*Source, error) {
	if inner == nil {
		return nil, errors.New("follow.New: nil inner source")
	}
	if leaders == nil {
		return nil, errors.New("follow.New: nil Leaders")
	}
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			cfg.errs = append(cfg.errs, fmt.Errorf("follow.New: option %d is nil", i))
			continue
		}
		o(&cfg)
	}
	if len(cfg.errs) > 0 {
		return nil, errors.Join(cfg.errs...)
	}
	return &Source{inner: inner, leaders: leaders, cfg: cfg}, nil
}

// Run runs the inner source with g wrapped so that records the leaders
// have not committed are held back, and returns what the inner source
// returned. See [sluice.Source] for the contract, which the wrapped
// group keeps towards the inner source: a Deliver holding records returns
// pause=true, and the partition is listed by Resumable once every held
// record was handed on and the runtime has room. Revoke, Lose and Shutdown
// drop the held records of the partitions they give up (never delivered,
// so never committed) and then call the runtime; commits, offsets and
// every other call pass through unchanged.
//
// Two goroutines run beside the inner source and end before Run returns:
// one reads the leaders' offsets every interval, the other forwards the
// runtime's Wake. A second call returns an error.
func (s *Source) Run(ctx context.Context, g sluice.Group) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("follow: Source.Run called twice")
	}
	sh := newShared()
	runtimeWake := g.Wake()
	bg, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { forwardWake(bg, runtimeWake, sh.wake) })
	wg.Go(func() { newPoller(s.leaders, s.cfg, sh).run(bg) })
	err := s.inner.Run(ctx, newGroup(g, sh, s.cfg.hooks))
	stop()
	wg.Wait()
	return err
}

// forwardWake signals out whenever in is signalled, until ctx is done: the
// source selects on the follower's Wake, which the leaders' poller signals
// too.
func forwardWake(ctx context.Context, in <-chan struct{}, out chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-in:
			signal(out)
		}
	}
}

// signal does a non-blocking send on a channel of capacity one.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
