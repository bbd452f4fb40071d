package franz_test

import (
	"context"
	"fmt"
	"log"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-go/sluice"
	"github.com/sluice-go/sluice/franz"
	"github.com/sluice-go/sluice/pipeline"
	"github.com/sluice-go/sluice/stages"
	"github.com/sluice-go/sluice/testkit/kafkatest"
)

// A share group consumer: the builder and stages are those of any Sluice
// consumer; every record is acknowledged on its own once its graph is done
// with it, and several processes with the same Group share the records of
// every partition.
func ExampleNewShareSource() {
	b, err := kafkatest.StartBroker(kafkatest.WithTopic("orders", 1))
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// An operator's step before a share group's first start: read what
	// was produced before the group existed (the default is latest).
	if err := startAtEarliest(ctx, b.Addrs(), "billing"); err != nil {
		log.Fatal(err)
	}
	if err := b.ProduceContext(ctx, "orders", sluice.Record{Value: []byte("a")},
		sluice.Record{Value: []byte("b")}, sluice.Record{Value: []byte("c")}); err != nil {
		log.Fatal(err)
	}

	src, err := franz.NewShareSource(franz.ShareConfig{Brokers: b.Addrs(), Group: "billing", Topics: []string{"orders"}})
	if err != nil {
		log.Fatal(err)
	}
	var done atomic.Int32
	build := func(_ *pipeline.Partition, in pipeline.Stream[sluice.Record]) pipeline.End {
		return stages.Each(in, func(_ context.Context, r sluice.Record) error {
			if done.Add(1) == 3 {
				cancel() // the demo ends here; Run drains and acknowledges
			}
			return nil
		})
	}
	err = pipeline.Run(ctx, src, build)
	fmt.Println("processed:", done.Load(), "err:", err)
	// Output: processed: 3 err: <nil>
}

// startAtEarliest sets the share group's share.auto.offset.reset to
// earliest (kafka-configs.sh --entity-type groups does the same).
func startAtEarliest(ctx context.Context, brokers []string, group string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			return fmt.Errorf("share.auto.offset.reset of %s: error code %d", group, r.ErrorCode)
		}
	}
	return nil
}
