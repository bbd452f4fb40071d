package franz

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-go/sluice/internal/rebalance"
)

const (
	// pollMargin, defaultSessionTimeout and defaultHeartbeat are shared
	// with the Kafka source (see rebalance.PollMargin): with the
	// defaults, the rebalance timeout is 20s + 4s + 6s = 30s, a dead
	// member's partitions move after 10s (kgo's default is 45s), and the
	// heartbeat interval is kgo's 3s, lowered to a third of a shorter
	// session timeout.
	pollMargin            = rebalance.PollMargin
	defaultSessionTimeout = rebalance.DefaultSessionTimeout
	defaultHeartbeat      = rebalance.DefaultHeartbeat
)

// groupTimeouts returns the kgo options for the group timeouts, derived
// from the runtime's drain timeout, for what Config.Opts did not set:
//
//   - kgo.RebalanceTimeout (how long the group waits for members to
//     rejoin, including a member busy revoking): drain + commitTimeout +
//     pollMargin, at least the session timeout. A revoke keeps the poll
//     loop for up to drain + commitTimeout, so a smaller RebalanceTimeout
//     in Opts is an error naming it; a larger one is kept.
//   - kgo.SessionTimeout: 10s; kgo.HeartbeatInterval: min(3s, session/3),
//     each unless Opts set it.
//
// With KIP-848 (kgo.ServerSideBalancer) the broker owns the session and
// heartbeat settings; kgo ignores these, and so does the source.
func (c Config) groupTimeouts(ut userTimeouts, drain time.Duration) ([]kgo.Opt, error) {
	need := drain + c.commitTimeout()
	if ut.rebalance != 0 && ut.rebalance < need {
		return nil, fmt.Errorf("franz: Config.Opts: kgo.RebalanceTimeout(%v) is below what a revoke needs: "+
			"drain timeout %v (pipeline.WithDrainTimeout) + commit timeout %v (40%% of Config.CloseTimeout %v) = %v",
			ut.rebalance, drain, c.commitTimeout(), c.closeTimeout(), need)
	}
	var opts []kgo.Opt
	session := ut.session
	if session == 0 {
		session = defaultSessionTimeout
		opts = append(opts, kgo.SessionTimeout(session))
	}
	if ut.heartbeat == 0 {
		opts = append(opts, kgo.HeartbeatInterval(min(defaultHeartbeat, session/3)))
	}
	if ut.rebalance == 0 {
		opts = append(opts, kgo.RebalanceTimeout(max(need+pollMargin, session)))
	}
	return opts, nil
}
