package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice-go/sluice/pipeline"
)

// groupProtocols are the values of --group-protocol, the default first.
var groupProtocols = []string{"cooperative-sticky", "range", "consumer"}

// groupFlags are the consumer-group flags: how the group assigns
// partitions and how fast it notices a member is gone.
type groupFlags struct {
	// protocol is --group-protocol, one of groupProtocols; empty means
	// the first (cooperative-sticky).
	protocol string
	// sessionTimeout is --session-timeout: with a classic protocol,
	// librdkafka's session.timeout.ms, with heartbeat.interval.ms a tenth
	// of it. Zero keeps librdkafka's defaults (45 s and 3 s).
	sessionTimeout time.Duration
	// drainTimeout is --drain-timeout (pipeline.WithDrainTimeout); zero
	// means pipeline.DefaultDrainTimeout.
	drainTimeout time.Duration
	// clientID is --client-id (librdkafka client.id of the consumer and
	// of the producer); empty keeps librdkafka's "rdkafka".
	clientID string
}

func (g groupFlags) validate() []error {
	var errs []error
	if g.protocol != "" && !slices.Contains(groupProtocols, g.protocol) {
		errs = append(errs, fmt.Errorf("--group-protocol=%q: want one of %s", g.protocol, strings.Join(groupProtocols, ", ")))
	}
	if g.sessionTimeout < 0 || (g.sessionTimeout > 0 && g.sessionTimeout < time.Second) {
		errs = append(errs, fmt.Errorf("--session-timeout=%v: must be at least 1s (or 0 for librdkafka's default)", g.sessionTimeout))
	}
	if g.sessionTimeout > 0 && g.protocol == "consumer" {
		errs = append(errs, fmt.Errorf("--session-timeout=%v: not supported with --group-protocol=consumer "+
			"(KIP-848: the broker sets it, group.consumer.session.timeout.ms)", g.sessionTimeout))
	}
	if g.drainTimeout < 0 {
		errs = append(errs, fmt.Errorf("--drain-timeout=%v: must be positive (or 0 for the default %v)", g.drainTimeout, pipeline.DefaultDrainTimeout))
	}
	return errs
}

// consumerOverrides are the librdkafka properties of the source
// (source.Config.Overrides) the flags ask for.
func (g groupFlags) consumerOverrides() map[string]any {
	ov := map[string]any{}
	switch g.protocol {
	case "", "cooperative-sticky":
		ov["partition.assignment.strategy"] = "cooperative-sticky"
	case "range":
		ov["partition.assignment.strategy"] = "range"
	case "consumer":
		ov["group.protocol"] = "consumer" // KIP-848: the broker assigns
	}
	if g.sessionTimeout > 0 {
		ov["session.timeout.ms"] = int(g.sessionTimeout.Milliseconds())
		ov["heartbeat.interval.ms"] = max(100, int(g.sessionTimeout.Milliseconds()/10))
	}
	if g.clientID != "" {
		ov["client.id"] = g.clientID
	}
	return ov
}

// producerOverrides are the librdkafka properties of the producer
// (confluent.ProducerConfig.Overrides) the flags ask for.
func (g groupFlags) producerOverrides() map[string]any {
	ov := map[string]any{}
	if g.clientID != "" {
		ov["client.id"] = g.clientID
	}
	return ov
}

// runOptions are the pipeline.Run options the flags ask for.
func (g groupFlags) runOptions() []pipeline.Option {
	if g.drainTimeout == 0 {
		return nil
	}
	return []pipeline.Option{pipeline.WithDrainTimeout(g.drainTimeout)}
}
