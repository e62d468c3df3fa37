// The owner check at accept: the kernel's answer for the client's own socket, found by its
// exact 4-tuple through sock_diag (SO_PEERCRED does not exist for TCP). One netlink round
// trip a connection, bounded by a receive timeout: a flood costs a hash lookup each, never a
// read of every socket on the machine.
package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	netlinkSockDiag  = 4  // NETLINK_SOCK_DIAG
	tcpEstablished   = 1
)

// peerOwner: the uid owning the socket whose local address is `theirs` and remote `ours`
// (the client's end of the connection we accepted), if it exists and is established.
func peerOwner(theirs, ours *net.TCPAddr) (uint32, bool) {
	family, src, dst := byte(syscall.AF_INET), theirs.IP.To4(), ours.IP.To4()
	if src == nil || dst == nil {
		family, src, dst = syscall.AF_INET6, theirs.IP.To16(), ours.IP.To16()
	}
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkSockDiag)
	if err != nil { // no sock_diag here: the table, by the whole 4-tuple
		return fromTable(family, src, theirs.Port, dst, ours.Port)
	}
	defer syscall.Close(fd)
	tv := syscall.Timeval{Usec: 200000}
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	// inet_diag_sockid: sport, dport (big-endian), src[16], dst[16], if, cookie[2]
	id := make([]byte, 48)
	binary.BigEndian.PutUint16(id[0:], uint16(theirs.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(ours.Port))
	copy(id[4:20], src)
	copy(id[20:36], dst)
	binary.LittleEndian.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	binary.LittleEndian.PutUint32(id[44:], 0xffffffff)
	req := make([]byte, 16+8+48)
	binary.LittleEndian.PutUint32(req[0:], uint32(len(req)))
	binary.LittleEndian.PutUint16(req[4:], sockDiagByFamily)
	binary.LittleEndian.PutUint16(req[6:], syscall.NLM_F_REQUEST)
	binary.LittleEndian.PutUint32(req[8:], 1)
	req[16], req[17] = family, syscall.IPPROTO_TCP
	binary.LittleEndian.PutUint32(req[20:], 1<<tcpEstablished)
	copy(req[24:], id)
	if syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}) != nil {
		return 0, false
	}
	buf := make([]byte, 4096)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	// the reply: nlmsghdr (16), inet_diag_msg: family, state, timer, retrans, id (48),
	// expires, rqueue, wqueue, uid, inode
	if err != nil || n < 16+4+48+20 || binary.LittleEndian.Uint16(buf[4:]) != sockDiagByFamily {
		return 0, false
	}
	msg := buf[16:n]
	if msg[0] != family || msg[1] != tcpEstablished || string(msg[4:40]) != string(id[:36]) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(msg[4+48+12:]), true
}

// allowed: the client's socket, by its exact 4-tuple, belongs to one of cfg.Owners.
func allowed(c net.Conn) bool {
	theirs, ok1 := c.RemoteAddr().(*net.TCPAddr)
	ours, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return false
	}
	uid, found := peerOwner(theirs, ours)
	if !found {
		return false
	}
	for _, o := range cfg.Owners {
		if uint32(o) == uid {
			return true
		}
	}
	return false
}

// fromTable: the established row of /proc/net/tcp(6) whose local and remote addresses and
// ports are all the socket's (never its ports alone).
func fromTable(family byte, src []byte, sport int, dst []byte, dport int) (uint32, bool) {
	hexed := func(ip []byte, port int) string {
		var b strings.Builder
		for i := 0; i+4 <= len(ip); i += 4 {
			fmt.Fprintf(&b, "%08X", binary.LittleEndian.Uint32(ip[i:i+4]))
		}
		return fmt.Sprintf("%s:%04X", b.String(), port)
	}
	local, remote := hexed(src, sport), hexed(dst, dport)
	name := "/proc/net/tcp"
	if family == syscall.AF_INET6 {
		name = "/proc/net/tcp6"
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 7 && f[3] == "01" && f[1] == local && f[2] == remote {
			uid, err := strconv.ParseUint(f[7], 10, 32)
			return uint32(uid), err == nil
		}
	}
	return 0, false
}
