//go:build !linux

package kafkatest

import (
	"context"
	"errors"
)

// ApacheKafkaVersion is the version of Apache Kafka that the helpers start.
const ApacheKafkaVersion = "4.4.0"

var errApacheLinux = errors.New("kafkatest: the Apache Kafka helper runs on Linux only")

type apacheCluster struct{}

func borrowApache(context.Context) (*apacheCluster, error) { return nil, errApacheLinux }
func closePool()                                           {}

func startApacheCluster(context.Context, brokerConfig) (*apacheCluster, error) {
	return nil, errApacheLinux
}

func newApacheBroker(context.Context, *apacheCluster, func(), brokerConfig) (*Broker, error) {
	return nil, errApacheLinux
}

func giveBack(*apacheCluster) {}
func discard(*apacheCluster)  {}

// StopNode is for Apache Kafka, which these helpers run on Linux only.
func (b *Broker) StopNode(int) error { return errApacheLinux }

// KillNode is for Apache Kafka, which these helpers run on Linux only.
func (b *Broker) KillNode(int) error { return errApacheLinux }

// StartNode is for Apache Kafka, which these helpers run on Linux only.
func (b *Broker) StartNode(context.Context, int) error { return errApacheLinux }

func (*apacheCluster) close() {}
