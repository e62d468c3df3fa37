// fsperf-delayer: a round trip as a network gives it, for checking the store conditions' model
// (issue 73). Packets an iptables rule sends to NFQUEUE `queue` are held `delay` each and then
// accepted, in order: kernel TCP on both ends is untouched, and its windows, slow start and
// ACK clocking meet a real round trip. Only metadata crosses to user space (NFQNL_COPY_META),
// GSO packets whole; the queue's verdicts are batched (every packet up to one id at once).
//
// Usage: fsperf-delayer QUEUE DELAY_NS STATS. It prints "ready" once bound; on SIGUSR1 or
// SIGTERM it writes to STATS (JSON): packets held, and how long each was held beyond the asked
// delay (p50, p99, max in ns): the delayer's own accuracy.
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
)

const (
	subsysQueue  = 3
	msgPacket    = 0
	msgConfig    = 2
	msgBatch     = 3
	cfgCmd       = 1
	cfgParams    = 2
	cfgMaxlen    = 3
	cfgMask      = 4
	cfgFlags     = 5
	cmdBind      = 1
	copyMeta     = 1
	flagGSO      = 1 << 2
	packetHdr    = 1
	verdictHdr   = 2
	nfAccept     = 1
	nlRequest    = 1
	nlAck        = 4
	nlmsgError   = 2
	queueMaxlen  = 1 << 16
	socketBuffer = 16 << 20
	spin         = 200 * time.Microsecond
)

type held struct {
	id  uint32
	due time.Time
}

var (
	fd    int
	queue uint16
	seq   uint32
	lock  sync.Mutex
	extra []int64 // ns past the due time at each verdict: its batch's first (latest) packet
	count int64
)

func attr(kind uint16, payload []byte) []byte {
	n := 4 + len(payload)
	b := make([]byte, (n+3)&^3)
	binary.LittleEndian.PutUint16(b[0:], uint16(n))
	binary.LittleEndian.PutUint16(b[2:], kind)
	copy(b[4:], payload)
	return b
}

func send(kind uint8, flags uint16, attrs ...[]byte) error {
	body := []byte{syscall.AF_UNSPEC, 0, byte(queue >> 8), byte(queue)} // nfgenmsg, res_id big-endian
	for _, a := range attrs {
		body = append(body, a...)
	}
	seq++
	msg := make([]byte, 16, 16+len(body))
	binary.LittleEndian.PutUint32(msg[0:], uint32(16+len(body)))
	binary.LittleEndian.PutUint16(msg[4:], subsysQueue<<8|uint16(kind))
	binary.LittleEndian.PutUint16(msg[6:], nlRequest|flags)
	binary.LittleEndian.PutUint32(msg[8:], seq)
	return syscall.Sendto(fd, append(msg, body...), 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK})
}

func be32(v uint32) []byte { b := make([]byte, 4); binary.BigEndian.PutUint32(b, v); return b }

func configure() error {
	steps := [][]byte{
		attr(cfgCmd, []byte{cmdBind, 0, 0, syscall.AF_INET}),
		attr(cfgParams, append(be32(0), copyMeta)),
		attr(cfgMaxlen, be32(queueMaxlen)),
	}
	for _, a := range steps {
		if err := send(msgConfig, nlAck, a); err != nil {
			return err
		}
		if err := acked(); err != nil {
			return err
		}
	}
	if err := send(msgConfig, nlAck, attr(cfgMask, be32(flagGSO)), attr(cfgFlags, be32(flagGSO))); err != nil {
		return err
	}
	return acked()
}

func acked() error {
	buf := make([]byte, 4096)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	if n >= 20 && binary.LittleEndian.Uint16(buf[4:]) == nlmsgError {
		if code := int32(binary.LittleEndian.Uint32(buf[16:])); code != 0 {
			return syscall.Errno(-code)
		}
	}
	return nil
}

// ids: the packet ids in one read of the socket (several messages may come at once).
func ids(buf []byte, out []uint32) []uint32 {
	for len(buf) >= 16 {
		n := int(binary.LittleEndian.Uint32(buf[0:]))
		if n < 16 || n > len(buf) {
			break
		}
		if binary.LittleEndian.Uint16(buf[4:]) == subsysQueue<<8|msgPacket {
			a := buf[20:n] // past nlmsghdr and nfgenmsg
			for len(a) >= 4 {
				l, t := int(binary.LittleEndian.Uint16(a[0:])), binary.LittleEndian.Uint16(a[2:])&0x7fff
				if l < 4 || l > len(a) {
					break
				}
				if t == packetHdr && l >= 8 {
					out = append(out, binary.BigEndian.Uint32(a[4:]))
				}
				if step := (l + 3) &^ 3; step < len(a) {
					a = a[step:]
				} else {
					break
				}
			}
		}
		if step := (n + 3) &^ 3; step < len(buf) {
			buf = buf[step:]
		} else {
			break
		}
	}
	return out
}

// until: sleeps to `spin` before t, then spins (Go's timers wake a few hundred µs late).
func until(t time.Time) {
	if d := time.Until(t) - spin; d > 0 {
		time.Sleep(d)
	}
	for time.Now().Before(t) {
	}
}

func release(pending chan held) {
	var next *held // read from the queue but not yet due
	for {
		p := next
		if p == nil {
			q := <-pending
			p = &q
		}
		next = nil
		until(p.due)
		first, last := *p, *p
	batch: // every packet due by now goes in the same verdict
		for {
			select {
			case q := <-pending:
				if q.due.After(time.Now()) {
					next = &q
					break batch
				}
				last = q
			default:
				break batch
			}
		}
		now := time.Now()
		send(msgBatch, 0, attr(verdictHdr, append(be32(nfAccept), be32(last.id)...)))
		lock.Lock()
		if len(extra) < 1<<20 {
			extra = append(extra, now.Sub(first.due).Nanoseconds()) // the batch's latest
		}
		lock.Unlock()
	}
}

func writeStats(path string) {
	lock.Lock()
	s := append([]int64(nil), extra...)
	n := count
	lock.Unlock()
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	out := map[string]int64{"packets": n, "batches": int64(len(s))}
	if len(s) > 0 {
		out["late_p50_ns"], out["late_p99_ns"], out["late_max_ns"] = s[len(s)/2], s[len(s)*99/100], s[len(s)-1]
	}
	data, _ := json.Marshal(out)
	tmp := path + ".new"
	if os.WriteFile(tmp, data, 0o600) == nil {
		os.Rename(tmp, path)
	}
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: fsperf-delayer QUEUE DELAY_NS STATS")
		os.Exit(2)
	}
	q, err1 := strconv.ParseUint(os.Args[1], 10, 16)
	ns, err2 := strconv.ParseInt(os.Args[2], 10, 64)
	if err1 != nil || err2 != nil || ns < 0 {
		fmt.Fprintln(os.Stderr, "fsperf-delayer: bad queue or delay")
		os.Exit(2)
	}
	queue = uint16(q)
	stats := os.Args[3]
	var err error
	if fd, err = syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, 12); err != nil { // NETLINK_NETFILTER
		fmt.Fprintln(os.Stderr, "fsperf-delayer: socket:", err)
		os.Exit(1)
	}
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, 33, socketBuffer) // SO_RCVBUFFORCE
	if err = syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err == nil {
		err = configure()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fsperf-delayer: binding queue", queue, ":", err)
		os.Exit(1)
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range signals {
			writeStats(stats)
			if s != syscall.SIGUSR1 {
				os.Exit(0)
			}
		}
	}()
	pending := make(chan held, queueMaxlen)
	go release(pending)
	fmt.Println("ready")
	buf := make([]byte, 1<<16)
	var got []uint32
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			if err == syscall.EINTR || err == syscall.ENOBUFS {
				continue
			}
			fmt.Fprintln(os.Stderr, "fsperf-delayer: recv:", err)
			os.Exit(1)
		}
		now := time.Now()
		got = ids(buf[:n], got[:0])
		lock.Lock()
		count += int64(len(got))
		lock.Unlock()
		for _, id := range got {
			pending <- held{id, now.Add(time.Duration(ns))}
		}
	}
}
