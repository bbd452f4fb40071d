package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// Topic and group names of every scenario (each scenario has a broker of
// its own, so they never clash).
const (
	inputTopic  = "events"
	outputTopic = "events-enriched"
	deadTopic   = "events-dlq"
	groupName   = "chaos"
)

// cluster is the scenario's embedded broker, in the chaos process itself:
// killing consumers never touches it, the group's state (members,
// assignments, commits) is read directly from kfake without a protocol
// round trip, and it cannot outlive the supervisor (the consumers are
// killed with it).
type cluster struct {
	b          *kafkatest.Broker
	partitions int32
	admin      *kgo.Client // for requests to the broker (DescribeTransactions); safe for concurrent use
}

// startCluster starts the broker with the three topics. KIP-848 groups
// drop a dead member after group.consumer.session.timeout.ms, set to
// sessionTimeout like the classic members' session.timeout.ms.
func startCluster(partitions int32, sessionTimeout time.Duration) (*cluster, error) {
	b, err := kafkatest.StartBroker(
		kafkatest.WithTopic(inputTopic, partitions), kafkatest.WithTopic(outputTopic, partitions), kafkatest.WithTopic(deadTopic, 1),
		kafkatest.WithKfakeOptions(kfake.BrokerConfigs(map[string]string{
			"group.consumer.session.timeout.ms":    strconv.Itoa(int(sessionTimeout.Milliseconds())),
			"group.consumer.heartbeat.interval.ms": "250",
		})))
	if err != nil {
		return nil, err
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		b.Close()
		return nil, err
	}
	return &cluster{b: b, partitions: partitions, admin: admin}, nil
}

func (c *cluster) close() {
	c.admin.Close()
	c.b.Close()
}

// groupState is one look at the group.
type groupState struct {
	at      time.Time
	state   string             // kfake's: Empty, PreparingRebalance, CompletingRebalance, Stable, Reconciling, ...
	epoch   int32              // the generation of a classic group, the group epoch of a KIP-848 one
	members map[string][]int32 // client id -> input partitions assigned (sorted)
	commits map[int32]int64    // committed offset per input partition
}

// group returns the group's state now (an empty state when it does not
// exist yet).
func (c *cluster) group() groupState {
	s := groupState{at: time.Now(), members: map[string][]int32{}, commits: map[int32]int64{}}
	gi := c.b.Cluster().GroupInfo(groupName)
	if gi == nil {
		return s
	}
	s.state, s.epoch = gi.State, gi.Epoch
	for _, m := range gi.Members {
		ps := slices.Clone(m.Assignment[inputTopic])
		slices.Sort(ps)
		s.members[m.ClientID] = append(s.members[m.ClientID], ps...)
	}
	for p, cm := range gi.Commits[inputTopic] {
		s.commits[p] = cm.Offset
	}
	return s
}

// String renders the state for failure messages.
func (s groupState) String() string {
	out := fmt.Sprintf("state %q", s.state)
	for _, id := range slices.Sorted(maps.Keys(s.members)) {
		out += fmt.Sprintf(", %s owns %v", id, s.members[id])
	}
	return out
}

// highWatermarks returns the next offset to be written, per partition of
// topic.
func (c *cluster) highWatermarks(topic string) map[int32]int64 {
	out := map[int32]int64{}
	for _, pi := range c.b.Cluster().PartitionInfos(topic) {
		out[pi.Partition] = pi.HighWatermark
	}
	return out
}

// protocolInUse asks the broker how the group assigns: "consumer" for a
// KIP-848 group, else the classic assignor its members agreed on (empty
// while the group is rebalancing).
func (c *cluster) protocolInUse(ctx context.Context) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.b.Addrs()...))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	lresp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
	if err != nil {
		return "", fmt.Errorf("list groups: %w", err)
	}
	for _, g := range lresp.Groups {
		if g.Group == groupName && g.GroupType == "consumer" {
			return "consumer", nil
		}
	}
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Groups = []string{groupName}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		return "", fmt.Errorf("describe group: %w", err)
	}
	if len(dresp.Groups) != 1 {
		return "", fmt.Errorf("describe group %q: %d groups in the answer", groupName, len(dresp.Groups))
	}
	return dresp.Groups[0].Protocol, nil
}

// readAll reads every record of topic up to its current high watermarks,
// ordered by partition and offset. With committed, it reads with
// isolation level read_committed, which returns only the records of
// committed transactions (and non-transactional ones): call it once no
// transaction is open on topic (waitStable), since a read_committed
// fetch stops at the last stable offset. It keeps the control records
// (transaction markers) to see its way to the high watermark, but does
// not return them. The same goes for a read_uncommitted read, which also
// returns the records of aborted and open transactions.
func (c *cluster) readAll(ctx context.Context, topic string, committed bool) ([]pipeline.Record, error) {
	hw := c.highWatermarks(topic)
	start := map[int32]kgo.Offset{}
	for p, h := range hw {
		if lso := c.b.Cluster().PartitionInfo(topic, p).LogStartOffset; h > lso {
			start[p] = kgo.NewOffset().At(lso)
		}
	}
	var out []pipeline.Record
	if len(start) == 0 {
		return out, nil
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.b.Addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.KeepControlRecords()} // a partition of a transactional topic ends with a marker
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	done := map[int32]bool{}
	for len(done) < len(start) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %q: %w after %d records", topic, err, len(out))
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = fmt.Errorf("reading %q partition %d: %w", topic, p, err) })
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if done[r.Partition] || r.Offset >= hw[r.Partition] {
				return
			}
			if r.Offset+1 >= hw[r.Partition] {
				done[r.Partition] = true
			}
			if r.Attrs.IsControl() {
				return
			}
			rec := pipeline.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, pipeline.Header{Key: h.Key, Value: h.Value})
			}
			out = append(out, rec)
		})
	}
	slices.SortStableFunc(out, func(x, y pipeline.Record) int {
		if x.Partition != y.Partition {
			return int(x.Partition - y.Partition)
		}
		return int(x.Offset - y.Offset)
	})
	return out, nil
}

// observe reads what check needs. With exactlyOnce, it reads the output
// and dead-letter topics with read_committed (the input is not
// transactional).
func (c *cluster) observe(ctx context.Context, exactlyOnce bool) (observed, error) {
	o := observed{inputTopic: inputTopic, committed: c.group().commits, high: c.highWatermarks(inputTopic), exactlyOnce: exactlyOnce}
	var err error
	if o.input, err = c.readAll(ctx, inputTopic, false); err != nil {
		return o, err
	}
	if o.output, err = c.readAll(ctx, outputTopic, exactlyOnce); err != nil {
		return o, err
	}
	o.dead, err = c.readAll(ctx, deadTopic, exactlyOnce)
	return o, err
}
