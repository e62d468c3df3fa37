// fsperf-store-proxy: the store conditions of pytest-fsperf (plan/conditions.py, run by store/proxy.py), between the
// daemons and a store the plugin started. It speaks HTTP/1.1 only as far as it must to find
// each request and reply (heads, Content-Length, chunked bodies, 100-continue); bodies are
// copied by the kernel (splice through TCPConn.ReadFrom) in slices that the bandwidth
// buckets pace. Per request: the added round trip (and one more for a new connection, its
// handshake), the time to first byte, a slow tail (1 in N held), injected errors and resets
// mid-body, a request-rate limit answered as the store's dialect answers it.
//
// Settings: one JSON line on stdin. It prints its port, then serves; only sockets whose owner
// is one of `owners` are served (another local user's connection is closed at accept). On
// SIGUSR1 it writes its counts to `stats` (a new file renamed over it).
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type settings struct {
	Upstream  string           `json:"upstream"`    // host:port of the store
	Dialect   string           `json:"dialect"`     // s3, oss, azure, gcs: how a throttle or error reads
	RTTNs     int64            `json:"rtt_ns"`      // added to each request; once more per new connection
	TTFBNs    int64            `json:"ttfb_ns"`     // added before each reply's first byte
	Window    int64            `json:"window"`      // the most a connection has in flight a round trip (0: no pacing)
	InitWin   int64            `json:"init_window"` // a new or idle connection's first window (slow start)
	IdleNs    int64            `json:"idle_ns"`     // idle this long, a connection starts slow again
	ConnBps   float64          `json:"conn_bps"`    // bytes/s of each connection's bodies (0: none)
	TotalBps  float64          `json:"total_bps"`   // bytes/s of all bodies together (0: none)
	Rate      float64          `json:"rate"`        // requests/s the store takes (0: no limit)
	Burst     float64          `json:"burst"`       // requests over the rate taken at once
	Errors    float64          `json:"errors"`      // fraction of requests answered with a 5xx
	Resets    float64          `json:"resets"`      // fraction of bodies cut mid-body, replies and uploads
	Corrupt   float64          `json:"corrupt"`     // fraction of ranged reads (206) with one byte flipped
	TailEvery int64            `json:"tail_every"`  // 1 request in this many held (0: none)
	TailNs    int64            `json:"tail_ns"`     // for this long
	Owners    []int            `json:"owners"`      // uids whose connections are served
	Gateway   *gatewaySettings `json:"gateway"`     // the OSS gateway (gateway.go), or none
	Stats     string           `json:"stats"`       // where SIGUSR1 writes the counts
	TLSCert   string           `json:"tls_cert"`    // the daemons reach it over TLS: its certificate
	TLSKey    string           `json:"tls_key"`     // and key (0600); "" both: plain HTTP
	Connect   []string         `json:"connect"`     // host:port a CONNECT may name (connect.go)
	Token     bool             `json:"token"`       // answer GET /fsperf-token (connect.go)
	Seed      int64            `json:"seed"`
}

const (
	maxOpen = 2048              // connections at once: past it one is closed as it is accepted
	idle    = 300 * time.Second // for the next request's head
)

var open int64

type counts struct {
	Requests  int64 `json:"requests"`
	Throttled int64 `json:"throttled"`
	Errors    int64 `json:"errors"`
	Resets    int64 `json:"resets"`
	Corrupted int64 `json:"corrupted"`
	Held      int64 `json:"held"`
	Retries   int64 `json:"retries"`
	Refused   int64 `json:"refused"`
	Conns     int64 `json:"connections"`
	BodyIn    int64 `json:"body_in"`
	BodyOut   int64 `json:"body_out"`
}

var (
	cfg         settings
	count       counts
	firsts      = newSamples(1 << 16) // time to first byte as the daemons meet it, ns
	storeFirsts = newSamples(1 << 16) // the store's own, behind the proxy
	total       *bucket
	rate        *bucket
	failed      sync.Map // method+path+range of a request answered with a fault: its retry is counted
	rngLock     sync.Mutex
	rng         *rand.Rand
)

func chance(p float64) bool {
	if p <= 0 {
		return false
	}
	rngLock.Lock()
	defer rngLock.Unlock()
	return rng.Float64() < p
}

func main() {
	line, err := bufio.NewReader(os.Stdin).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "settings:", err)
		os.Exit(2)
	}
	rng = rand.New(rand.NewSource(cfg.Seed))
	if cfg.TotalBps > 0 {
		total = newBucket(cfg.TotalBps, cfg.TotalBps/20)
	}
	if cfg.Rate > 0 {
		rate = newBucket(cfg.Rate, cfg.Burst+1)
	}
	var tlsConf *tls.Config
	if cfg.TLSCert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tls:", err)
			os.Exit(2)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(2)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	os.Stdout.Close()
	os.Stderr.Close() // nothing a client sends is written anywhere
	usr1 := make(chan os.Signal, 4)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			writeStats()
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !allowed(c) {
			atomic.AddInt64(&count.Refused, 1)
			c.Close()
			continue
		}
		if atomic.AddInt64(&open, 1) > maxOpen {
			atomic.AddInt64(&open, -1)
			atomic.AddInt64(&count.Refused, 1)
			c.Close()
			continue
		}
		atomic.AddInt64(&count.Conns, 1)
		go func() {
			defer atomic.AddInt64(&open, -1)
			raw := c.(*net.TCPConn)
			if tlsConf == nil {
				serve(raw, raw)
				return
			}
			// the owner was checked on the TCP connection; its handshake has the idle limit
			raw.SetDeadline(time.Now().Add(idle))
			t := opened(raw, tlsConf)
			if t == nil || t.Handshake() != nil {
				raw.Close()
				return
			}
			raw.SetDeadline(time.Time{})
			serve(t, raw)
		}()
	}
}

func writeStats() {
	// counts since the start; first bytes since the last write (a measured window's)
	out := map[string]any{"counts": snapshot(), "first_byte_ns": firsts.summary(true),
		"store_first_byte_ns": storeFirsts.summary(true)}
	data, _ := json.Marshal(out)
	tmp := cfg.Stats + ".new"
	if os.WriteFile(tmp, data, 0o600) == nil {
		os.Rename(tmp, cfg.Stats)
	}
}

func snapshot() counts {
	return counts{atomic.LoadInt64(&count.Requests), atomic.LoadInt64(&count.Throttled),
		atomic.LoadInt64(&count.Errors), atomic.LoadInt64(&count.Resets), atomic.LoadInt64(&count.Corrupted),
		atomic.LoadInt64(&count.Held), atomic.LoadInt64(&count.Retries),
		atomic.LoadInt64(&count.Refused), atomic.LoadInt64(&count.Conns), atomic.LoadInt64(&count.BodyIn),
		atomic.LoadInt64(&count.BodyOut)}
}

type head struct {
	lines   []string // the start line and headers, as received
	length  int64    // Content-Length, or -1
	chunked bool
	expect  bool
	closing bool
	key     string // method path range: a retry's identity
	method  string
	status  int
}

func readHead(r *bufio.Reader) (*head, error) {
	h := &head{length: -1}
	for n := 0; ; n++ {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		if n > 200 || len(line) > 65536 {
			return nil, fmt.Errorf("head too large")
		}
		if line == "\r\n" || line == "\n" {
			break
		}
		h.lines = append(h.lines, line)
		name, value, ok := strings.Cut(line, ":")
		if !ok || n == 0 {
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(name) {
		case "content-length":
			h.length, err = strconv.ParseInt(value, 10, 64)
			if err != nil || h.length < 0 {
				return nil, fmt.Errorf("bad length")
			}
		case "transfer-encoding":
			h.chunked = strings.Contains(strings.ToLower(value), "chunked")
		case "expect":
			h.expect = strings.EqualFold(value, "100-continue")
		case "connection":
			h.closing = strings.EqualFold(value, "close")
		}
	}
	if len(h.lines) == 0 {
		return nil, fmt.Errorf("empty head")
	}
	start := strings.Fields(h.lines[0])
	if len(start) < 2 {
		return nil, fmt.Errorf("bad start line")
	}
	h.method, h.key = start[0], start[0]+" "+start[1]+h.key
	if strings.HasPrefix(start[0], "HTTP/") {
		h.status, _ = strconv.Atoi(start[1])
	}
	return h, nil
}

func (h *head) bytes() []byte {
	var b bytes.Buffer
	for _, l := range h.lines {
		b.WriteString(l)
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func (h *head) hasBody() bool { return h.chunked || h.length > 0 }

type link struct {
	client   net.Conn     // the daemon's connection: its TCP one, or TLS over it
	tcp      *net.TCPConn // the TCP connection under it (a reset is sent on it)
	secure   bool         // the daemon spoke TLS: the store is told so (X-Forwarded-Proto)
	up       *net.TCPConn
	cr, ur   *bufio.Reader
	conn     *bucket
	fresh    bool
	toStore  flow // each direction's congestion window (Window > 0)
	toClient flow
}

// flow: one direction of a connection as TCP paces it over a round trip.
type flow struct {
	cwnd int64     // bytes a round trip
	sent time.Time // when it last sent: idle past IdleNs, it starts slow again
}

func serve(c net.Conn, tcp *net.TCPConn) {
	defer c.Close()
	l := &link{client: c, tcp: tcp, cr: bufio.NewReaderSize(c, 64<<10), fresh: true}
	_, l.secure = c.(*tls.Conn)
	if cfg.ConnBps > 0 {
		l.conn = newBucket(cfg.ConnBps, cfg.ConnBps/20)
	}
	defer func() {
		if l.up != nil {
			l.up.Close()
		}
	}()
	for {
		c.SetReadDeadline(time.Now().Add(idle)) // a head idle or trickling this long: closed
		req, err := readHead(l.cr)
		if err != nil {
			return
		}
		c.SetReadDeadline(time.Time{})
		if l.token(req) {
			continue
		}
		if !l.one(req) {
			return
		}
	}
}

// one request and its reply; false: the connection ends.
func (l *link) one(req *head) bool {
	started := time.Now()
	atomic.AddInt64(&count.Requests, 1)
	if _, seen := failed.LoadAndDelete(req.key); seen {
		atomic.AddInt64(&count.Retries, 1)
	}
	wait := time.Duration(cfg.RTTNs)
	if l.fresh { // the handshake's round trip
		wait += time.Duration(cfg.RTTNs)
		l.fresh = false
	}
	if rate != nil && !rate.take(1) {
		atomic.AddInt64(&count.Throttled, 1)
		failed.Store(req.key, true)
		sleepUntil(started.Add(wait))
		status, code, message := throttled()
		return l.answer(req, status, code, message)
	}
	if chance(cfg.Errors) {
		atomic.AddInt64(&count.Errors, 1)
		failed.Store(req.key, true)
		sleepUntil(started.Add(wait))
		status, code, message := internal()
		return l.answer(req, status, code, message)
	}
	if cfg.TailEvery > 0 && chance(1/float64(cfg.TailEvery)) {
		atomic.AddInt64(&count.Held, 1)
		wait += time.Duration(cfg.TailNs)
	}
	var held []byte // a body already read (a chunked upload the gateway sends with a length)
	if cfg.Gateway != nil {
		next, body, no := gatewayRequest(req, l.cr)
		if no != nil {
			return l.answer(req, no.status, no.code, no.message)
		}
		req, held = next, body
	}
	if l.up == nil {
		up, err := net.Dial("tcp4", cfg.Upstream)
		if err != nil {
			return false
		}
		l.up = up.(*net.TCPConn)
		l.up.SetNoDelay(true)
		l.ur = bufio.NewReaderSize(l.up, 64<<10)
	}
	if l.secure {
		req = forwardedTLS(req)
	}
	if _, err := l.up.Write(req.bytes()); err != nil {
		return false
	}
	if held != nil {
		if _, err := l.up.Write(held); err != nil {
			return false
		}
	} else if req.hasBody() && !req.expect { // the body, then the reply
		if !l.upload(req) {
			return false
		}
	}
	reply, err := readHead(l.ur)
	if err != nil {
		return false
	}
	// a final answer before an awaited body: passed on, and the connection ends (the body
	// may or may not follow)
	ended := req.hasBody() && req.expect && reply.status != 100
	if req.hasBody() && req.expect && !ended {
		if _, err := l.client.Write(reply.bytes()); err != nil {
			return false
		}
		if !l.upload(req) {
			return false
		}
		if reply, err = readHead(l.ur); err != nil {
			return false
		}
	}
	var whole []byte // a body read whole: a listing rewritten, or a chunked reply
	if cfg.Gateway != nil && reply.status >= 200 {
		listing := isListing(reply, req.method)
		if listing || (reply.chunked && req.method != "HEAD") {
			if whole, err = readBody(l.ur, reply); err != nil {
				return false
			}
			if listing {
				whole = fixListing(whole)
			}
			reply = gatewayReply(reply, int64(len(whole)))
		} else {
			reply = gatewayReply(reply, -1)
		}
	}
	own := time.Since(started).Nanoseconds()
	sleepUntil(started.Add(wait + time.Duration(cfg.TTFBNs)))
	firsts.add(time.Since(started).Nanoseconds())
	storeFirsts.add(own)
	if _, err := l.client.Write(reply.bytes()); err != nil {
		return false
	}
	if whole != nil {
		if _, err := l.client.Write(whole); err != nil {
			return false
		}
		return !ended && !req.closing && !reply.closing
	}
	bodied := req.method != "HEAD" && reply.status >= 200 && reply.status != 204 && reply.status != 304
	if bodied {
		cut := cutAt(reply.length)
		flip := int64(-1)
		if reply.status == 206 && reply.length > 0 && chance(cfg.Corrupt) { // object data, not a listing
			rngLock.Lock()
			flip = rng.Int63n(reply.length)
			rngLock.Unlock()
			atomic.AddInt64(&count.Corrupted, 1)
		}
		if reply.length < 0 && !reply.chunked { // until the store closes
			io.Copy(l.client, l.ur)
			return false
		}
		if !l.body(l.ur, l.up, l.client, reply, &count.BodyOut, cut, flip, &l.toClient) {
			if cut >= 0 {
				l.reset(req)
			}
			return false
		}
	}
	return !ended && !req.closing && !reply.closing
}

// cutAt: where a body of this length is cut (a reset at the reset rate), or -1.
func cutAt(length int64) int64 {
	if length <= 1 || !chance(cfg.Resets) {
		return -1
	}
	rngLock.Lock()
	defer rngLock.Unlock()
	return 1 + rng.Int63n(length-1)
}

// upload: a request's body to the store, cut mid-body at the reset rate (the store gets a
// part and the connection's end, the client a reset: a PUT or part it must send again).
func (l *link) upload(req *head) bool {
	cut := cutAt(req.length)
	if l.body(l.cr, l.client, l.up, req, &count.BodyIn, cut, -1, &l.toStore) {
		return true
	}
	if cut >= 0 {
		l.reset(req)
	}
	return false
}

// reset: the client's connection dropped as a store's reads (RST, not FIN), counted, and the
// request's next try counted as a retry.
func (l *link) reset(req *head) {
	atomic.AddInt64(&count.Resets, 1)
	failed.Store(req.key, true)
	l.tcp.SetLinger(0)
}

// answer the request ourselves (a throttle or an injected error): the body it sends is not
// read, so the connection closes after one that has a body.
func (l *link) answer(req *head, status int, code, message string) bool {
	ctype, body := "application/xml", ""
	switch cfg.Dialect {
	case "gcs":
		ctype = "application/json"
		body = fmt.Sprintf(`{"error":{"code":%d,"message":%q,"errors":[{"reason":%q,"message":%q}]}}`,
			status, message, code, message)
	default:
		body = fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"+
			"<Message>%s</Message><RequestId>fsperf</RequestId></Error>", code, message)
	}
	closing := req.hasBody()
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n", status,
		statusText(status), ctype, len(body))
	if cfg.Dialect == "azure" {
		fmt.Fprintf(&b, "x-ms-error-code: %s\r\n", code)
	}
	if closing {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	if req.method != "HEAD" {
		b.WriteString(body)
	}
	if _, err := io.WriteString(l.client, b.String()); err != nil {
		return false
	}
	return !closing
}

func statusText(status int) string {
	return map[int]string{429: "Too Many Requests", 500: "Internal Server Error",
		503: "Service Unavailable"}[status]
}

func throttled() (int, string, string) {
	switch cfg.Dialect {
	case "gcs":
		return 429, "rateLimitExceeded", "The rate of requests is too high."
	case "azure":
		return 503, "ServerBusy", "Operations per second is over the account limit."
	case "oss":
		return 503, "TotalQpsLimitExceeded", "Max total qps limit is exceeded"
	}
	return 503, "SlowDown", "Please reduce your request rate."
}

func internal() (int, string, string) {
	if cfg.Dialect == "gcs" {
		return 503, "backendError", "Backend Error"
	}
	return 500, "InternalError", "We encountered an internal error. Please try again."
}

// body copies one message body from r (buffered over raw) to w: Content-Length bytes through
// splice in paced slices, or chunked framing as it comes. cut >= 0: stop after that many
// bytes (false: the connection is to be dropped).
// flip >= 0: that byte of the body is sent inverted (a store's silent corruption).
func (l *link) body(r *bufio.Reader, raw, w net.Conn, h *head, n *int64, cut, flip int64,
	f *flow) bool {
	if h.chunked {
		return copyChunked(r, w, n)
	}
	left := h.length
	if cut >= 0 && cut < left {
		left = cut
	}
	windowed := cfg.Window > 0 && cfg.RTTNs > 0
	if windowed && (f.cwnd == 0 || time.Since(f.sent) > time.Duration(cfg.IdleNs)) {
		f.cwnd = cfg.InitWin // RFC 6928's 10 segments; Linux's slow start after idle
	}
	round := time.Now()
	inRound := int64(0)
	for left > 0 {
		slice := int64(256 << 10) // paced in slices: each waits its time in the buckets
		if l.conn == nil && total == nil {
			slice = left // unpaced: one splice loop for the whole body
		}
		if windowed { // a window a round trip: its acknowledgements clock the next
			if inRound >= f.cwnd {
				sleepUntil(round.Add(time.Duration(cfg.RTTNs)))
				round, inRound = time.Now(), 0
				if f.cwnd *= 2; f.cwnd > cfg.Window {
					f.cwnd = cfg.Window
				}
			}
			if slice > f.cwnd-inRound {
				slice = f.cwnd - inRound
			}
		}
		if slice > left {
			slice = left
		}
		if done := h.length - left; flip >= done && flip < done+slice {
			if flip > done {
				slice = flip - done
			} else { // this byte, inverted
				b, err := r.ReadByte()
				if err != nil {
					return false
				}
				if _, err := w.Write([]byte{^b}); err != nil {
					return false
				}
				left, inRound = left-1, inRound+1
				atomic.AddInt64(n, 1)
				continue
			}
		}
		l.pace(slice)
		if b := int64(r.Buffered()); b > 0 { // what the head's reader already holds
			if b > slice {
				b = slice
			}
			data, _ := r.Peek(int(b))
			if _, err := w.Write(data); err != nil {
				return false
			}
			r.Discard(int(b))
			left -= b
			inRound += b
			atomic.AddInt64(n, b)
			continue
		}
		got, err := io.Copy(w, io.LimitReader(raw, slice)) // a TCP w splices
		left -= got
		inRound += got
		atomic.AddInt64(n, got)
		if err != nil || got == 0 {
			return false
		}
	}
	f.sent = time.Now()
	return cut < 0 || cut >= h.length
}

func (l *link) pace(n int64) {
	if l.conn != nil {
		l.conn.wait(float64(n))
	}
	if total != nil {
		total.wait(float64(n))
	}
}

func copyChunked(r *bufio.Reader, w io.Writer, n *int64) bool {
	for {
		line, err := r.ReadString('\n')
		if err != nil || len(line) > 1024 {
			return false
		}
		if _, err := io.WriteString(w, line); err != nil {
			return false
		}
		sizeText, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		size, err := strconv.ParseInt(sizeText, 16, 64)
		if err != nil || size < 0 {
			return false
		}
		if size == 0 { // trailers, then the empty line
			for {
				t, err := r.ReadString('\n')
				if err != nil {
					return false
				}
				if _, err := io.WriteString(w, t); err != nil {
					return false
				}
				if t == "\r\n" || t == "\n" {
					return true
				}
			}
		}
		got, err := io.CopyN(w, r, size+2) // the data and its CRLF
		atomic.AddInt64(n, got)
		if err != nil {
			return false
		}
	}
}

func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}

// bucket: a token bucket of `per` tokens a second holding at most `most`.
type bucket struct {
	mu        sync.Mutex
	per, most float64
	have      float64
	last      time.Time
}

func newBucket(per, most float64) *bucket {
	if most < 1 {
		most = 1
	}
	return &bucket{per: per, most: most, have: most, last: time.Now()}
}

func (b *bucket) refill() {
	now := time.Now()
	b.have += now.Sub(b.last).Seconds() * b.per
	if b.have > b.most {
		b.have = b.most
	}
	b.last = now
}

// take n now, or say it cannot.
func (b *bucket) take(n float64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	if b.have < n {
		return false
	}
	b.have -= n
	return true
}

// wait until n can be taken (into debt: a slice larger than the bucket waits its time).
func (b *bucket) wait(n float64) {
	b.mu.Lock()
	b.refill()
	b.have -= n
	debt := -b.have
	b.mu.Unlock()
	if debt > 0 {
		time.Sleep(time.Duration(debt / b.per * float64(time.Second)))
	}
}

// samples: the last `size` values, for a median and a tail.
type samples struct {
	mu   sync.Mutex
	vals []int64
	next int
	size int
	n    int64
}

func newSamples(size int) *samples { return &samples{size: size} }

func (s *samples) add(v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if len(s.vals) < s.size {
		s.vals = append(s.vals, v)
		return
	}
	s.vals[s.next] = v
	s.next = (s.next + 1) % s.size
}

func (s *samples) summary(reset bool) map[string]int64 {
	s.mu.Lock()
	vals := append([]int64(nil), s.vals...)
	n := s.n
	if reset {
		s.vals, s.next, s.n = s.vals[:0], 0, 0
	}
	s.mu.Unlock()
	if len(vals) == 0 {
		return map[string]int64{"n": 0}
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	at := func(q float64) int64 { return vals[int(q*float64(len(vals)-1))] }
	return map[string]int64{"n": n, "p50": at(0.5), "p99": at(0.99), "max": vals[len(vals)-1]}
}
