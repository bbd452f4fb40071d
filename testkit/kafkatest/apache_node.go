//go:build linux

package kafkatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-go/sluice/internal/tiedproc"
)

// apacheNode is one Apache Kafka process: a combined broker and KRaft
// controller with its own data directory, configuration and log file.
type apacheNode struct {
	id         int
	dir        string // data, server.properties, log4j2.properties, server.log
	brokerPort int
	ctrlPort   int
	props      string // server.properties content
	classpath  string
	jvmFlags   []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done <-chan struct{} // closed when the running process was reaped
}

func (n *apacheNode) addr() string { return fmt.Sprintf("127.0.0.1:%d", n.brokerPort) }

func (n *apacheNode) logPath() string { return filepath.Join(n.dir, "server.log") }

// nodeProperties renders the server.properties of node id in a cluster
// whose voters are given. Settings are chosen for tests: replication
// factors fit the cluster size, rebalances start at once, sessions may be
// short, coordinators' topics are small, deleted topics go quickly.
func nodeProperties(id int, dir string, brokerPort, ctrlPort int, voters string, nodes int, extra map[string]string) string {
	rf := min(nodes, 3)
	minISR := 1
	if rf >= 3 {
		minISR = 2
	}
	p := map[string]string{
		"process.roles":                     "broker,controller",
		"node.id":                           fmt.Sprint(id),
		"controller.quorum.voters":          voters,
		"listeners":                         fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", brokerPort, ctrlPort),
		"advertised.listeners":              fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", brokerPort),
		"controller.listener.names":         "CONTROLLER",
		"inter.broker.listener.name":        "PLAINTEXT",
		"listener.security.protocol.map":    "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs":                          filepath.Join(dir, "data"),
		"num.partitions":                    "1",
		"default.replication.factor":        fmt.Sprint(rf),
		"min.insync.replicas":               "1",
		"auto.create.topics.enable":         "false",
		"delete.topic.enable":               "true",
		"file.delete.delay.ms":              "1000",
		"num.network.threads":               "2",
		"num.io.threads":                    "4",
		"num.recovery.threads.per.data.dir": "1",
		"background.threads":                "4",
		"log.segment.bytes":                 fmt.Sprint(64 << 20),

		"offsets.topic.replication.factor": fmt.Sprint(rf),
		"offsets.topic.num.partitions":     "8",
		"offsets.commit.timeout.ms":        "5000",

		"transaction.state.log.replication.factor":                    fmt.Sprint(rf),
		"transaction.state.log.min.isr":                               fmt.Sprint(minISR),
		"transaction.state.log.num.partitions":                        "4",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",

		"share.coordinator.state.topic.replication.factor": fmt.Sprint(rf),
		"share.coordinator.state.topic.min.isr":            fmt.Sprint(minISR),
		"share.coordinator.state.topic.num.partitions":     "2",

		// Classic groups: no initial delay, sessions down to a second.
		"group.initial.rebalance.delay.ms": "0",
		"group.min.session.timeout.ms":     "1000",
		// KIP-848 groups: the session is the broker's, not the client's;
		// members learn of assignment changes on their next heartbeat.
		"group.consumer.session.timeout.ms":        "6000",
		"group.consumer.min.session.timeout.ms":    "1000",
		"group.consumer.heartbeat.interval.ms":     "250",
		"group.consumer.min.heartbeat.interval.ms": "100",
		// Share groups: the same timings.
		"group.share.session.timeout.ms":          "6000",
		"group.share.min.session.timeout.ms":      "1000",
		"group.share.heartbeat.interval.ms":       "250",
		"group.share.min.heartbeat.interval.ms":   "100",
		"group.share.min.record.lock.duration.ms": "1000",
	}
	maps.Copy(p, extra)
	keys := slices.Sorted(maps.Keys(p))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, p[k])
	}
	return b.String()
}

const log4j2Properties = `status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = %s
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%%d] %%p %%m (%%c)%%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka-request.name = kafka.request.logger
logger.kafka-request.level = WARN
logger.state-change.name = state.change.logger
logger.state-change.level = WARN
`

// prepare writes the node's files and formats its storage for clusterID.
func (n *apacheNode) prepare(ctx context.Context, clusterID string) error {
	if err := os.MkdirAll(filepath.Join(n.dir, "data"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "server.properties"), []byte(n.props), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "log4j2.properties"), fmt.Appendf(nil, log4j2Properties, n.logPath()), 0o644); err != nil {
		return err
	}
	args := n.javaArgs("kafka.tools.StorageTool", "format", "-t", clusterID, "-c", filepath.Join(n.dir, "server.properties"))
	cmd := exec.CommandContext(ctx, javaPath(), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := tiedproc.Run(cmd); err != nil {
		return fmt.Errorf("kafkatest: format storage of node %d: %w\n%s", n.id, err, tail(out.String(), 20))
	}
	return nil
}

func (n *apacheNode) javaArgs(mainClass string, args ...string) []string {
	a := slices.Clone(n.jvmFlags)
	a = append(a,
		"-Dlog4j2.configurationFile="+filepath.Join(n.dir, "log4j2.properties"),
		"-Djava.awt.headless=true",
		"-cp", n.classpath, mainClass)
	return append(a, args...)
}

// javaPath is $JAVA_HOME/bin/java when JAVA_HOME is set, else java.
func javaPath() string {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		return filepath.Join(h, "bin", "java")
	}
	return "java"
}

// start runs kafka.Kafka, tied to this process (tiedproc.Start): the broker
// ends when the process that started it ends, however that ends.
func (n *apacheNode) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("kafkatest: node %d already running", n.id)
	}
	stdout, err := os.OpenFile(filepath.Join(n.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer stdout.Close()
	cmd := exec.Command(javaPath(), n.javaArgs("kafka.Kafka", filepath.Join(n.dir, "server.properties"))...)
	cmd.Stdout, cmd.Stderr = stdout, stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p, err := tiedproc.Start(cmd)
	if err != nil {
		return fmt.Errorf("kafkatest: start node %d: %w", n.id, err)
	}
	n.cmd, n.done = cmd, p.Done()
	return nil
}

// exited reports whether the process has ended (a nil channel if none runs).
func (n *apacheNode) exited() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.done
}

// stop ends the process: SIGTERM (a controlled shutdown) when graceful,
// SIGKILL otherwise or when the graceful stop takes longer than timeout.
// It returns once the process was reaped.
func (n *apacheNode) stop(graceful bool, timeout time.Duration) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd, n.done = nil, nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	if graceful {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			return
		case <-time.After(timeout):
		}
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
	<-done
}

// logTail returns the last n lines of the node's log and of its stdout.
func (n *apacheNode) logTail(lines int) string {
	var b strings.Builder
	for _, f := range []string{n.logPath(), filepath.Join(n.dir, "stdout.log")} {
		data, err := os.ReadFile(f)
		if err != nil || len(data) == 0 {
			continue
		}
		fmt.Fprintf(&b, "---- %s (last %d lines) ----\n%s\n", f, lines, tail(string(data), lines))
	}
	return b.String()
}

var errNodeExited = errors.New("the broker process exited")
