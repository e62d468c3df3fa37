// connect.go: for a daemon that names its store's host itself and cannot be given an endpoint
// (gcsfuse before 0.36 speaks to www.googleapis.com only). Told HTTPS_PROXY=http://<the proxy>,
// it asks CONNECT www.googleapis.com:443; the proxy answers 200 for the hosts in `connect`
// (refusing any other) and serves the tunnel as one of its own TLS connections: the same
// certificate (its names include those hosts), the same conditions, the same store behind.
// Nothing is ever dialled but the store: a CONNECT names which certificate name is expected,
// not where the bytes go. `token` answers GET /fsperf-token with an access token that the
// store does not check (fake-gcs-server has no authentication), for a daemon that asks one
// of a token URL (gcsfuse --token-url); it is not counted among the store's requests.
package main

import (
	"bufio"
	"crypto/tls"
	"net"
	"strconv"
	"strings"
)

const tokenPath = "/fsperf-token"

// buffered: a TCP connection whose first bytes were read into r already.
type buffered struct {
	*net.TCPConn
	r *bufio.Reader
}

func (b buffered) Read(p []byte) (int, error) { return b.r.Read(p) }

// opened: the connection a client made, as TLS (direct, or inside a tunnel it asked for);
// nil where it asked for something else, which has been answered and closed.
func opened(raw *net.TCPConn, conf *tls.Config) *tls.Conn {
	if len(cfg.Connect) == 0 {
		return tls.Server(raw, conf)
	}
	r := bufio.NewReaderSize(raw, 4096)
	first, err := r.Peek(1)
	if err != nil {
		return nil
	}
	if first[0] == 0x16 { // a TLS handshake record: the proxy as an HTTPS endpoint
		return tls.Server(buffered{raw, r}, conf)
	}
	h, err := readHead(r)
	if err != nil {
		return nil
	}
	start := strings.Fields(h.lines[0])
	if h.method != "CONNECT" || len(start) < 2 || !allowedHost(start[1]) || r.Buffered() > 0 {
		raw.Write([]byte("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
		return nil
	}
	if _, err := raw.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return nil
	}
	return tls.Server(raw, conf)
}

func allowedHost(target string) bool {
	for _, h := range cfg.Connect {
		if strings.EqualFold(target, h) {
			return true
		}
	}
	return false
}

// token answers a GET of the token path; false: not one, the request goes to the store.
func (l *link) token(req *head) bool {
	start := strings.Fields(req.lines[0])
	if !cfg.Token || req.method != "GET" || len(start) < 2 || start[1] != tokenPath || req.hasBody() {
		return false
	}
	body := `{"access_token":"fsperf-unchecked","token_type":"Bearer"}` // no expiry: kept
	l.client.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body))
	return true
}

// forwardedTLS: the request as the store gets it from a daemon that spoke TLS to the proxy: with
// X-Forwarded-Proto: https (the client's own dropped), so that a URL the store builds from the
// request (fake-gcs-server's resumable upload Location) leads back through the proxy over TLS.
func forwardedTLS(req *head) *head {
	out := *req
	out.lines = make([]string, 0, len(req.lines)+1)
	for i, line := range req.lines {
		name, _, _ := strings.Cut(line, ":")
		if i > 0 && strings.EqualFold(strings.TrimSpace(name), "x-forwarded-proto") {
			continue
		}
		out.lines = append(out.lines, line)
	}
	out.lines = append(out.lines, "X-Forwarded-Proto: https\r\n")
	return &out
}
