package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
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

// cluster is the scenario's broker: kfake in the chaos process, or an
// Apache Kafka cluster in Java processes the chaos process started (and
// kills when it ends, however it ends). Either way killing consumers
// never touches it, and the suite sees the group (members, assignments,
// commits) and the partitions as any client would, through the admin
// API (kafkatest's broker-agnostic helpers).
type cluster struct {
	b          *kafkatest.Broker
	adm        *kadm.Client // the Broker's admin client (closed with it)
	partitions int32
	admin      *kgo.Client // for requests to the broker (DescribeTransactions); safe for concurrent use
	// pollEvery is how often the monitor and the waits look at the
	// group. Every look is a few requests to the broker: cheap in
	// process, a few milliseconds of a loaded Java broker's time on
	// Apache Kafka.
	pollEvery time.Duration
}

// Poll intervals by broker (cluster.pollEvery).
const (
	pollEveryKfake  = 20 * time.Millisecond
	pollEveryApache = 50 * time.Millisecond
)

// brokerCallTimeout bounds every look at the broker: the client retries
// within it.
const brokerCallTimeout = 30 * time.Second

// brokerConfigs are the broker settings of every scenario: KIP-848
// groups drop a dead member after group.consumer.session.timeout.ms, set
// to sessionTimeout like the classic members' session.timeout.ms, and
// their members heartbeat every 250 ms, so that they learn of assignment
// changes quickly.
func brokerConfigs(sessionTimeout time.Duration) map[string]string {
	return map[string]string{
		"group.consumer.session.timeout.ms":    strconv.Itoa(int(sessionTimeout.Milliseconds())),
		"group.consumer.heartbeat.interval.ms": "250",
	}
}

// startCluster starts a broker of the given kind with the three topics
// and brokerConfigs. The caller must close it.
func startCluster(ctx context.Context, kind kafkatest.Kind, partitions int32, sessionTimeout time.Duration) (*cluster, error) {
	b, err := kafkatest.Start(ctx, kind,
		kafkatest.WithTopic(inputTopic, partitions), kafkatest.WithTopic(outputTopic, partitions), kafkatest.WithTopic(deadTopic, 1),
		kafkatest.WithBrokerConfig(brokerConfigs(sessionTimeout)))
	if err != nil {
		return nil, err
	}
	adm, err := b.Admin()
	if err != nil {
		b.Close()
		return nil, err
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		b.Close()
		return nil, err
	}
	every := pollEveryKfake
	if kind == kafkatest.Apache {
		every = pollEveryApache
	}
	return &cluster{b: b, adm: adm, partitions: partitions, admin: admin, pollEvery: every}, nil
}

func (c *cluster) close() {
	c.admin.Close()
	c.b.Close()
}

// groupState is one look at the group.
type groupState struct {
	at    time.Time
	state string // the broker's: Empty, PreparingRebalance, CompletingRebalance, Stable (classic); Empty, Assigning, Reconciling, Stable (KIP-848)
	// members maps each member's client id to the input partitions
	// assigned to it (sorted). For a classic group, kfake's
	// DescribeGroups answers assignments only while the group is
	// Stable (the members own nothing here in the other states); Apache
	// Kafka answers each member's last assignment in every state.
	members map[string][]int32
	commits map[int32]int64 // committed offset per input partition
	err     error           // the broker did not answer; the rest is empty
}

// group returns the group's state now, with its commits (an empty state
// when it does not exist yet).
func (c *cluster) group() groupState {
	ctx, cancel := context.WithTimeout(context.Background(), brokerCallTimeout)
	defer cancel()
	s := c.describe(ctx)
	if s.err != nil {
		return s
	}
	commits, err := c.b.CommittedContext(ctx, groupName, inputTopic)
	if err != nil {
		return groupState{at: s.at, members: map[string][]int32{}, commits: map[int32]int64{}, err: err}
	}
	s.commits = commits
	return s
}

// describe returns the group's state and members now, without its
// commits.
func (c *cluster) describe(ctx context.Context) groupState {
	s := groupState{at: time.Now(), members: map[string][]int32{}, commits: map[int32]int64{}}
	g, err := c.b.GroupContext(ctx, groupName)
	if err != nil {
		s.err = err
		return s
	}
	s.state = g.State
	for _, m := range g.Members {
		s.members[m.ClientID] = append(s.members[m.ClientID], m.Assignment[inputTopic]...)
		slices.Sort(s.members[m.ClientID])
	}
	return s
}

// String renders the state for failure messages.
func (s groupState) String() string {
	if s.err != nil {
		return fmt.Sprintf("unknown (%v)", s.err)
	}
	out := fmt.Sprintf("state %q", s.state)
	for _, id := range slices.Sorted(maps.Keys(s.members)) {
		out += fmt.Sprintf(", %s owns %v", id, s.members[id])
	}
	return out
}

// highWatermarks returns the next offset to be written, per partition of
// topic.
func (c *cluster) highWatermarks(ctx context.Context, topic string) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
	defer cancel()
	_, hw, err := c.b.OffsetsContext(ctx, topic)
	return hw, err
}

// protocolInUse asks the broker how the group assigns: "consumer" for a
// KIP-848 group, else the classic assignor its members agreed on (empty
// while the group is rebalancing).
func (c *cluster) protocolInUse(ctx context.Context) (string, error) {
	lresp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, c.admin)
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
	dresp, err := dreq.RequestWith(ctx, c.admin)
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
func (c *cluster) readAll(ctx context.Context, topic string, committed bool) ([]sluice.Record, error) {
	if committed {
		return c.b.ReadCommittedContext(ctx, topic)
	}
	return c.b.ReadAllContext(ctx, topic)
}

// observe reads what check needs. With exactlyOnce, it reads the output
// and dead-letter topics with read_committed (the input is not
// transactional).
func (c *cluster) observe(ctx context.Context, exactlyOnce bool) (observed, error) {
	g := c.group()
	if g.err != nil {
		return observed{}, fmt.Errorf("the group's commits: %w", g.err)
	}
	hw, err := c.highWatermarks(ctx, inputTopic)
	if err != nil {
		return observed{}, err
	}
	o := observed{inputTopic: inputTopic, committed: g.commits, high: hw, exactlyOnce: exactlyOnce}
	if o.input, err = c.readAll(ctx, inputTopic, false); err != nil {
		return o, err
	}
	if o.output, err = c.readAll(ctx, outputTopic, exactlyOnce); err != nil {
		return o, err
	}
	o.dead, err = c.readAll(ctx, deadTopic, exactlyOnce)
	return o, err
}
