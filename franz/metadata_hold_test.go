package franz

import (
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deletionWatch records, through a DeleteTopics control of a kfake
// cluster, whether a topic was deleted yet.
type deletionWatch struct {
	mu      sync.Mutex
	deleted bool
}

// watchDeletion returns a deletionWatch of c.
func watchDeletion(c *kfake.Cluster) *deletionWatch {
	d := &deletionWatch{}
	c.ControlKey(kmsg.DeleteTopics.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		d.mu.Lock()
		d.deleted = true
		d.mu.Unlock()
		return nil, nil, false
	})
	return d
}

// seen reports whether a topic was deleted.
func (d *deletionWatch) seen() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.deleted
}

// holdMetadataAfterDeletion makes c answer each Metadata request that
// names every one of topics only once wait returned, from the first
// deletion d saw on (holdMetadata).
func holdMetadataAfterDeletion(c *kfake.Cluster, d *deletionWatch, wait func(), topics ...string) {
	holdMetadata(c, d.seen, wait, topics...)
}

// holdMetadata makes c answer each Metadata request that names every one
// of topics, and that hold reports true for, only once wait returned.
// The tests pick topics that only the source's client names together (its
// metadata loop asks for every topic it consumes): kgo purges a topic
// from a client on that loop, which waits for the request. hold and wait
// run in c's control function (c.CurrentNode is the node the request
// came to). A broker answers the requests of one connection in order:
// the client's later requests to that node on the same connection (kgo
// sends Metadata, OffsetCommit and Heartbeat requests on one) wait too.
func holdMetadata(c *kfake.Cluster, hold func() bool, wait func(), topics ...string) {
	c.ControlKey(kmsg.Metadata.Int16(), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.MetadataRequest)
		names := func(topic string) bool {
			return slices.ContainsFunc(req.Topics, func(t kmsg.MetadataRequestTopic) bool {
				return t.Topic != nil && *t.Topic == topic
			})
		}
		if !all(topics, names) || !hold() {
			return nil, nil, false
		}
		c.SleepControl(wait)
		return nil, nil, false
	})
}

// all reports whether ok holds for every one of vs.
func all[T any](vs []T, ok func(T) bool) bool {
	for _, v := range vs {
		if !ok(v) {
			return false
		}
	}
	return true
}
