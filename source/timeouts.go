package source

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/internal/rebalance"
)

// DefaultCloseTimeout is the CloseTimeout used when Config leaves it zero;
// it equals sluice.DefaultCloseTimeout.
const DefaultCloseTimeout = sluice.DefaultCloseTimeout

const (
	// pollMargin, defaultSessionTimeout and defaultHeartbeat are shared
	// with the franz backend (see rebalance.PollMargin): with the
	// defaults, max.poll.interval.ms is 20s + 4s + 6s = 30s, a dead
	// member's partitions move after 10s (librdkafka's default is 45s),
	// and heartbeat.interval.ms is librdkafka's 3s, lowered to a third of
	// a shorter session timeout.
	pollMargin            = rebalance.PollMargin
	defaultSessionTimeout = rebalance.DefaultSessionTimeout
	defaultHeartbeat      = rebalance.DefaultHeartbeat
	// maxPollIntervalLimit is the largest max.poll.interval.ms librdkafka
	// accepts (rdkafka_conf.c).
	maxPollIntervalLimit = 24 * time.Hour
)

// groupTimeouts sets the group timeouts in m, from what the source knows
// at Run start:
//
//   - max.poll.interval.ms, which librdkafka also sends as the group's
//     rebalance timeout (how long the group waits for members to rejoin,
//     including members that died): drain timeout + commitTimeout +
//     pollMargin, at least session.timeout.ms. A revoke keeps the poll
//     loop for up to drain timeout + commitTimeout (the drain, then the
//     bounded synchronous commit), so an override below that is an error.
//   - session.timeout.ms (classic protocol only): 10s, and
//     heartbeat.interval.ms min(3s, session/3). With group.protocol=consumer
//     (KIP-848) both are broker settings and librdkafka rejects them
//     (rdkafka_conf.c, rd_kafka_conf_finalize), so the source sets neither.
//
// Properties set in Overrides are kept.
func (c Config) groupTimeouts(m kafka.ConfigMap, drain time.Duration) error {
	need := drain + c.commitTimeout()
	const mpKey = "max.poll.interval.ms"
	if v, ok := c.Overrides[mpKey]; ok {
		ms, err := millis(mpKey, v)
		if err != nil {
			return err
		}
		if time.Duration(ms)*time.Millisecond < need {
			return fmt.Errorf("source: Config.Overrides[%q] = %d is below what a revoke needs: "+
				"drain timeout %v (pipeline.WithDrainTimeout) + commit timeout %v (40%% of Config.CloseTimeout %v) = %d ms",
				mpKey, ms, drain, c.commitTimeout(), c.closeTimeout(), need.Milliseconds())
		}
		return nil
	}
	poll := need + pollMargin
	if !c.consumerProtocol() {
		session := defaultSessionTimeout
		if v, ok := c.Overrides["session.timeout.ms"]; ok {
			if ms, err := millis("session.timeout.ms", v); err == nil {
				session = time.Duration(ms) * time.Millisecond
			} // else librdkafka rejects the value with a clear error
		} else {
			m["session.timeout.ms"] = int(session.Milliseconds())
		}
		if _, ok := c.Overrides["heartbeat.interval.ms"]; !ok {
			m["heartbeat.interval.ms"] = int(min(defaultHeartbeat, session/3).Milliseconds())
		}
		poll = max(poll, session) // librdkafka: max.poll.interval.ms >= session.timeout.ms
	}
	if poll > maxPollIntervalLimit {
		return fmt.Errorf("source: drain timeout %v (pipeline.WithDrainTimeout) with Config.CloseTimeout %v "+
			"needs max.poll.interval.ms %d, above librdkafka's maximum %d",
			drain, c.closeTimeout(), poll.Milliseconds(), maxPollIntervalLimit.Milliseconds())
	}
	m[mpKey] = int(poll.Milliseconds())
	return nil
}

// millis reads a millisecond property given as an int or a numeric string.
func millis(k string, v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("source: Config.Overrides[%q] = %v: want an integer number of milliseconds", k, v)
}

// consumerProtocol reports whether Overrides select KIP-848's consumer
// group protocol.
func (c Config) consumerProtocol() bool {
	gp, ok := c.Overrides["group.protocol"].(string)
	return ok && strings.EqualFold(strings.TrimSpace(gp), "consumer")
}

// commitTimeout bounds each synchronous commit (revoke, shutdown): 40% of
// CloseTimeout. On shutdown the final commit and leaving the group share
// it, and closing the client gets the other 60%: librdkafka waits up to 5s
// for the answer to its LeaveGroup while closing
// (rd_kafka_LeaveGroupRequest, a fixed timeout; a LeaveGroup queued
// behind a JoinGroup the coordinator holds waits that long), which the
// default 10s leave room for.
func (c Config) commitTimeout() time.Duration { return rebalance.CommitTimeout(c.CloseTimeout) }

func (c Config) closeTimeout() time.Duration {
	return rebalance.CloseTimeoutOrDefault(c.CloseTimeout)
}
