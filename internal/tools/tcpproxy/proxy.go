// Package tcpproxy is a loopback TCP proxy for tests that need a network
// fault between a client and a server: the test cuts the connections
// (every connection reset, new ones closed as soon as they are accepted) or
// stalls them (nothing forwarded in either direction, connections kept
// open, as when a network partition drops packets), then restores them.
//
// [Front] puts a proxy in front of a server's listener so that a server
// which advertises its listener's address (Kafka brokers do, in metadata
// responses) makes its clients connect through the proxy.
package tcpproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// Mode is what the proxy does with traffic.
type Mode int

const (
	// Forward copies bytes both ways: the proxy is transparent.
	Forward Mode = iota
	// Stalled holds every byte in both directions; connections stay open
	// and new ones are accepted (and dialled through) but stalled too.
	// Bytes read while stalled are delivered, in order, on Restore.
	Stalled
	// Cut resets every connection and closes each new one as soon as it
	// is accepted, until Restore.
	Cut
)

var modeNames = [...]string{Forward: "forward", Stalled: "stalled", Cut: "cut"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy accepts connections on a loopback address and forwards each to its
// target. Create it with [New] or [Front]; Close it. Its methods are safe
// for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	mode     Mode
	open     chan struct{} // closed while the mode is Forward
	conns    map[*pair]struct{}
	accepted int
	held     int // chunks read and waiting for Restore
	closed   bool

	wg sync.WaitGroup // the accept loop and every pair's goroutines
}

// New listens on 127.0.0.1 (a random port) and forwards every accepted
// connection to target, a host:port dialled once per connection. A failed
// dial closes the accepted connection.
func New(target string) (*Proxy, error) {
	if target == "" {
		return nil, errors.New("tcpproxy: New: empty target address")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: listen: %w", err)
	}
	open := make(chan struct{})
	close(open)
	p := &Proxy{ln: ln, target: target, open: open, conns: make(map[*pair]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address connections are forwarded to.
func (p *Proxy) Target() string { return p.target }

// Accepted is the number of connections accepted so far, in every mode.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Held is the number of chunks of bytes, over every connection and both
// directions, that the proxy read and holds because it is stalled. A test
// can wait for it to know that a peer wrote during the stall.
func (p *Proxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Cut resets every open connection and, until Restore, closes new ones as
// soon as they are accepted.
func (p *Proxy) Cut() { p.set(Cut) }

// Stall stops forwarding in both directions until Restore; connections
// stay open.
func (p *Proxy) Stall() { p.set(Stalled) }

// Restore forwards again: stalled connections resume where they stopped,
// new connections are forwarded. Connections reset by Cut stay closed.
func (p *Proxy) Restore() { p.set(Forward) }

func (p *Proxy) set(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == m {
		return
	}
	switch {
	case m == Forward:
		close(p.open)
	case p.mode == Forward:
		p.open = make(chan struct{})
	}
	p.mode = m
	if m == Cut {
		for c := range p.conns {
			c.close()
		}
	}
}

// Close stops accepting, closes every connection and returns once every
// goroutine of the proxy has exited. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	for c := range p.conns {
		c.close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		p.accepted++
		if p.closed || p.mode == Cut {
			p.mu.Unlock()
			down.Close()
			continue
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(down)
	}
}

// serve dials the target for one accepted connection and copies both ways
// until either side closes or the proxy cuts it.
func (p *Proxy) serve(down net.Conn) {
	defer p.wg.Done()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		down.Close()
		return
	}
	c := newPair(down, up)
	p.mu.Lock()
	if p.closed || p.mode == Cut {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.copy(c, up, down) }()
	go func() { defer both.Done(); p.copy(c, down, up) }()
	both.Wait()

	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// copy forwards src to dst, waiting before every write while the proxy is
// not forwarding. Either direction ending closes the whole pair: the
// clients these tests drive treat a half-closed connection as closed.
func (p *Proxy) copy(c *pair, dst, src net.Conn) {
	defer c.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf) // EOF, a reset or a cut: the pair closes
		if n > 0 {
			if !p.waitOpen(c) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitOpen blocks while the proxy stalls; it reports false once c is
// closed (cut, or the proxy closed).
func (p *Proxy) waitOpen(c *pair) bool {
	p.mu.Lock()
	open := p.open
	stalled := p.mode != Forward
	if stalled {
		p.held++
	}
	p.mu.Unlock()
	if stalled {
		defer func() {
			p.mu.Lock()
			p.held--
			p.mu.Unlock()
		}()
	}
	select {
	case <-open:
	case <-c.done:
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// pair is one proxied connection: the client's side (down) and the
// target's (up).
type pair struct {
	down, up net.Conn
	once     sync.Once
	done     chan struct{} // closed by close
}

func newPair(down, up net.Conn) *pair {
	return &pair{down: down, up: up, done: make(chan struct{})}
}

func (c *pair) close() {
	c.once.Do(func() {
		close(c.done)
		// SetLinger(0): a cut resets the connection instead of a clean
		// FIN, as a broken network path looks to the peer eventually.
		for _, conn := range []net.Conn{c.down, c.up} {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			conn.Close()
		}
	})
}
