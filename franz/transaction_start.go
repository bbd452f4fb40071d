package franz

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// start gives the producer the shared client cl and initializes its
// producer id (InitProducerID: it bumps the epoch of the transactional
// id, fencing a predecessor still running with it, and aborts what it
// left open), and reads whether the cluster runs KIP-890 part 2, within
// the commit timeout and until ctx (Run's) is done. Run calls it before
// its poll loop; kgo may have joined the group meanwhile, its
// OnPartitionsAssigned waiting for that loop (Run serves it either way).
//
// kgo retries an InitProducerID answered with a retriable error
// (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, ...) until the context
// ends, and then reports the context's error only: the error start
// returns names the broker's last answer, which the client's logger
// watched meanwhile (initWatch).
func (t *transactions) start(ctx context.Context, cl *kgo.Client) error {
	if t == nil {
		return nil
	}
	t.txn.cl = cl
	t.p.attach(cl)
	if vs := cl.OptValues(kgo.InstanceID); len(vs) == 2 && vs[1] == true {
		id, _ := vs[0].(string)
		t.txn.instanceID = &id // static membership: TxnOffsetCommit names it
	}
	timeout := t.cfg.CommitTimeoutOrDefault()
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t.watch.begin()
	_, _, err := cl.ProducerID(ictx)
	last := t.watch.end()
	if err != nil {
		return t.initError(err, last, timeout)
	}
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ictx, cl)
	if err != nil {
		return fmt.Errorf("franz: reading the cluster's transaction version (ApiVersions): %w", err)
	}
	capped, _ := cl.OptValue(kgo.MaxVersions).(*kversion.Versions)
	t.txn.kip890p2 = kip890p2(resp, capped)
	return nil
}

// initError is start's error for the InitProducerID that failed with
// err, last being the broker's last answer kgo retried (or nil).
func (t *transactions) initError(err, last error, timeout time.Duration) error {
	what := fmt.Sprintf("franz: initializing the transactional producer (InitProducerID for %q)", t.txn.txnID)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && last != nil:
		return fmt.Errorf("%s did not finish within TransactionalConfig.CommitTimeout (%v): %w; the broker's last answer: %w", what, timeout, err, last)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s did not finish within TransactionalConfig.CommitTimeout (%v): %w", what, timeout, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// initWatch keeps the last error kgo retried an InitProducerID for while
// start waits for the producer id. kgo reports those errors only in its
// debug log line "retrying request" (keys request, request_error,
// response_error): while it watches, the client's logger (slogAdapter)
// asks kgo for its debug lines, whatever the slog handler keeps, and
// shows every one to the watch. A nil *initWatch watches nothing.
type initWatch struct {
	on   atomic.Bool
	mu   sync.Mutex
	last error
}

func (w *initWatch) begin() {
	if w != nil {
		w.on.Store(true)
	}
}

// end stops watching and returns the last error seen, or nil.
func (w *initWatch) end() error {
	if w == nil {
		return nil
	}
	w.on.Store(false)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

func (w *initWatch) watching() bool { return w != nil && w.on.Load() }

// saw reads one kgo log line: a retry of an InitProducerID records its
// response's error, else the request's (a broker that could not be
// reached); a context's end is no answer of the broker's.
func (w *initWatch) saw(keyvals []any) {
	if !w.watching() {
		return
	}
	var req string
	var reqErr, respErr error
	for i := 0; i+1 < len(keyvals); i += 2 {
		k, _ := keyvals[i].(string)
		switch k {
		case "request":
			req, _ = keyvals[i+1].(string)
		case "request_error":
			reqErr, _ = keyvals[i+1].(error)
		case "response_error":
			respErr, _ = keyvals[i+1].(error)
		}
	}
	err := respErr
	if err == nil {
		err = reqErr
	}
	if req != kmsg.InitProducerID.Name() || err == nil ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	w.mu.Lock()
	w.last = err
	w.mu.Unlock()
}
