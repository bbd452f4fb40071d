package rebalance

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-go/sluice"
)

const (
	// DefaultCommitInterval is the commit interval when Settings leave it
	// zero: sluice.DefaultCommitInterval.
	DefaultCommitInterval = sluice.DefaultCommitInterval
	// DefaultCloseTimeout is the close timeout when Settings leave it
	// zero: sluice.DefaultCloseTimeout.
	DefaultCloseTimeout = sluice.DefaultCloseTimeout

	// PollMargin is what a backend's default rebalance timeout
	// (max.poll.interval.ms, kgo.RebalanceTimeout) adds to the longest a
	// revoke keeps the poll loop busy (drain + synchronous commit): close
	// hooks and scheduling. With the defaults, 20s + 4s + 6s = 30s.
	PollMargin = 6 * time.Second
	// DefaultSessionTimeout lets the group move a dead member's
	// partitions after 10s (both clients default to 45s).
	DefaultSessionTimeout = 10 * time.Second
	// DefaultHeartbeat is both clients' default heartbeat interval; the
	// backends lower it to a third of a shorter session timeout.
	DefaultHeartbeat = 3 * time.Second
)

// Settings are the client-independent half of a backend's Config (the
// sluice.GroupConfig it embeds), which the core uses and validates the
// same way for every backend. Prefix ("source", "franz") starts every
// error message, which names the offending Config field. The core uses
// CommitInterval, CloseTimeout, Group and OffsetStore (where newly
// assigned partitions start, Core.Claim).
type Settings struct {
	Prefix string
	sluice.GroupConfig
}

// Validate checks the fields and returns an error naming the first bad
// one (as Config.<Field>), or nil. Backends call it from NewSource /
// NewSource before their own checks.
func (s Settings) Validate() error {
	p := s.Prefix
	if err := CheckBrokers(p, "Config.Brokers", s.Brokers); err != nil {
		return err
	}
	if strings.TrimSpace(s.Group) == "" {
		return errors.New(p + ": Config.Group is empty")
	}
	if len(s.Topics) == 0 {
		return errors.New(p + ": Config.Topics is empty")
	}
	for i, t := range s.Topics {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("%s: Config.Topics[%d] is empty", p, i)
		}
	}
	if s.CommitInterval < 0 {
		return fmt.Errorf("%s: Config.CommitInterval = %v: must not be negative", p, s.CommitInterval)
	}
	if s.CommitInterval > 0 && s.CommitInterval < time.Millisecond {
		return fmt.Errorf("%s: Config.CommitInterval = %v: must be at least 1ms", p, s.CommitInterval)
	}
	if s.CloseTimeout < 0 {
		return fmt.Errorf("%s: Config.CloseTimeout = %v: must not be negative", p, s.CloseTimeout)
	}
	if s.CloseTimeout > 0 && s.CloseTimeout < 100*time.Millisecond {
		return fmt.Errorf("%s: Config.CloseTimeout = %v: must be at least 100ms", p, s.CloseTimeout)
	}
	return nil
}

// CommitIntervalOrDefault returns d, or DefaultCommitInterval for zero.
func CommitIntervalOrDefault(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultCommitInterval
	}
	return d
}

// CloseTimeoutOrDefault returns d, or DefaultCloseTimeout for zero.
func CloseTimeoutOrDefault(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultCloseTimeout
	}
	return d
}

// CommitTimeout bounds each synchronous commit (revoke, shutdown) for a
// close timeout closeTimeout (zero: the default): 40% of it. On shutdown
// the final commit and leaving the group share it; closing the client
// gets the other 60%.
func CommitTimeout(closeTimeout time.Duration) time.Duration {
	return CloseTimeoutOrDefault(closeTimeout) * 2 / 5
}
