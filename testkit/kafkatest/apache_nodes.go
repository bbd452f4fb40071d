//go:build linux

package kafkatest

import (
	"context"
	"fmt"
	"time"
)

// StopNode stops node i (1 to the number of nodes) of an Apache Kafka
// cluster with SIGTERM: a controlled shutdown that moves its partition
// leaderships away first. It returns once the process ended.
func (b *Broker) StopNode(i int) error {
	return b.nodeOp(i, func(n *apacheNode) { n.stop(true, time.Minute) })
}

// KillNode kills node i of an Apache Kafka cluster with SIGKILL, as a
// crashed machine would end.
func (b *Broker) KillNode(i int) error { return b.nodeOp(i, func(n *apacheNode) { n.stop(false, 0) }) }

// StartNode starts node i again after StopNode or KillNode and waits until
// the cluster has every broker registered again.
func (b *Broker) StartNode(ctx context.Context, i int) error {
	var err error
	if e := b.nodeOp(i, func(n *apacheNode) { err = n.start() }); e != nil {
		return e
	}
	if err != nil {
		return err
	}
	// A killed node stays registered until its broker session runs out,
	// so the cluster's readiness says nothing of this node: wait until it
	// answers a request itself.
	if err := b.ac.waitNodeAnswers(ctx, b.ac.nodes[i-1]); err != nil {
		return err
	}
	return b.ac.waitReady(ctx, len(b.ac.nodes))
}

func (b *Broker) nodeOp(i int, op func(*apacheNode)) error {
	if b.ac == nil {
		return fmt.Errorf("kafkatest: node %d: nodes can be stopped and started on Apache Kafka only", i)
	}
	if i < 1 || i > len(b.ac.nodes) {
		return fmt.Errorf("kafkatest: node %d: the cluster has nodes 1 to %d", i, len(b.ac.nodes))
	}
	op(b.ac.nodes[i-1])
	return nil
}
