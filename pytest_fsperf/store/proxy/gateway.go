// The OSS gateway (store/oss.py): with settings' `gateway`, each request an OSS client sends
// (ossfs, ossfs2: OSS names, an OSS signature; or an S3 client with the same key id) is
// checked for the session's key id and its one bucket, its names mapped to S3's, signed
// again with SigV4 (UNSIGNED-PAYLOAD: bodies are streamed, never hashed) and sent to MinIO;
// replies come back with OSS's names, listings as OSS clients read them. Bodies stay on the
// proxy's kernel path (splice); only a listing and a chunked upload pass through memory.
package main

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

type gatewaySettings struct {
	UpAccess  string `json:"upstream_access_key"`
	UpSecret  string `json:"upstream_secret_key"`
	Region    string `json:"region"`
	AccessKey string `json:"access_key"` // the only key id let in
	Bucket    string `json:"bucket"`     // the only bucket served
	Domain    string `json:"domain"`     // virtual-host style: BUCKET.DOMAIN
}

const (
	maxChunked = 64 << 20 // a chunked upload is held in memory: at most this
	maxListing = 16 << 20 // a reply read whole (a listing of 1,000 keys is well under 1 MiB)
)

var (
	passed = map[string]bool{"content-type": true, "content-length": true, "content-md5": true,
		"range": true, "if-match": true, "if-none-match": true, "if-modified-since": true,
		"if-unmodified-since": true, "cache-control": true, "content-disposition": true,
		"content-encoding": true, "expires": true, "expect": true}
	renamed = map[string]string{"x-oss-copy-source": "x-amz-copy-source",
		"x-oss-copy-source-range":  "x-amz-copy-source-range",
		"x-oss-metadata-directive": "x-amz-metadata-directive"}
	hop = map[string]bool{"connection": true, "keep-alive": true, "transfer-encoding": true,
		"proxy-connection": true, "server": true, "date": true, "content-length": true}
	// the key id of an OSS signature (V1 or V4), or of SigV4 (an S3 client)
	keyID        = regexp.MustCompile(`^(?:OSS ([^:\s]+):|(?:OSS4|AWS4)-HMAC-SHA256 Credential=([^/\s,]+)/)`)
	s3Namespace  = []byte(` xmlns="http://s3.amazonaws.com/doc/2006-03-01/"`)
	lastModified = regexp.MustCompile(`<LastModified>(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?Z</LastModified>`)
)

type refusal struct {
	status        int
	code, message string
}

// gatewayRequest: the request as MinIO is to get it (and a chunked body, read), or why not.
func gatewayRequest(req *head, r *bufio.Reader) (*head, []byte, *refusal) {
	g := cfg.Gateway
	start := strings.Fields(req.lines[0])
	if len(start) != 3 {
		return nil, nil, &refusal{400, "InvalidRequest", "a bad request line"}
	}
	target, err := url.Parse(start[1])
	if err != nil {
		return nil, nil, &refusal{400, "InvalidURI", "a bad request target"}
	}
	fields := map[string]string{}
	for _, line := range req.lines[1:] {
		name, value, _ := strings.Cut(line, ":")
		fields[strings.ToLower(strings.TrimSpace(name))] = strings.TrimSpace(value)
	}
	host := strings.ToLower(target.Hostname())
	if host == "" {
		host = strings.ToLower(fields["host"])
		if i := strings.LastIndexByte(host, ':'); i >= 0 {
			host = host[:i]
		}
	}
	bucket, key := "", target.EscapedPath()
	if strings.HasSuffix(host, "."+g.Domain) {
		bucket = strings.TrimSuffix(host, "."+g.Domain)
	} else {
		rest := strings.TrimPrefix(key, "/")
		b, k, _ := strings.Cut(rest, "/")
		bucket, _ = url.PathUnescape(b)
		key = "/" + k
	}
	if key == "" {
		key = "/"
	}
	if bucket != g.Bucket {
		return nil, nil, &refusal{403, "AccessDenied", "this endpoint serves one bucket"}
	}
	given := ""
	if m := keyID.FindStringSubmatch(fields["authorization"]); m != nil {
		given = m[1] + m[2]
	}
	if subtle.ConstantTimeCompare([]byte(given), []byte(g.AccessKey)) != 1 {
		return nil, nil, &refusal{403, "InvalidAccessKeyId", "unknown access key id"}
	}
	out := map[string]string{}
	for name, value := range fields {
		switch {
		case passed[name]:
			out[name] = value
		case strings.HasPrefix(name, "x-oss-meta-"):
			out["x-amz-meta-"+strings.TrimPrefix(name, "x-oss-meta-")] = value
		case renamed[name] != "":
			out[renamed[name]] = value
		}
	}
	if source, ok := out["x-amz-copy-source"]; ok {
		src, _ := url.PathUnescape(source)
		src = strings.TrimLeft(src, "/")
		if b, _, _ := strings.Cut(src, "/"); b != g.Bucket {
			return nil, nil, &refusal{403, "AccessDenied", "a copy from another bucket"}
		}
		out["x-amz-copy-source"] = encodePath("/" + src)
	}
	var body []byte
	if req.chunked {
		if body, err = readChunked(r, maxChunked); err != nil {
			return nil, nil, &refusal{400, "InvalidRequest", "a chunked body of the wrong shape"}
		}
		out["content-length"] = strconv.Itoa(len(body))
		delete(out, "expect")
	}
	unescaped, err := url.PathUnescape(key)
	if err != nil {
		return nil, nil, &refusal{400, "InvalidURI", "a bad key"}
	}
	path := "/" + g.Bucket + encodePath(unescaped)
	query := canonicalQuery(target.RawQuery)
	sign(req.method, path, query, out)
	line := req.method + " " + path
	if query != "" {
		line += "?" + query
	}
	lines := []string{line + " HTTP/1.1\r\n"}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		lines = append(lines, name+": "+out[name]+"\r\n")
	}
	next := *req
	next.lines, next.chunked = lines, false
	if body != nil {
		next.length, next.expect = int64(len(body)), false
	}
	return &next, body, nil
}

// encodePath: every byte but unreserved ones and '/' percent-encoded, as SigV4 and MinIO
// encode a key, whatever encoding the client chose.
func encodePath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '/' || c == '-' || c == '_' || c == '.' || c == '~' ||
			'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func encodeQueryPart(s string) string { return strings.ReplaceAll(encodePath(s), "/", "%2F") }

// canonicalQuery: the query's pairs decoded and strictly encoded again, sorted (SigV4's
// canonical form, sent as it is signed); OSS's objectMeta (a HEAD of the metadata) dropped.
func canonicalQuery(raw string) string {
	var pairs []string
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		k, _ = url.QueryUnescape(k)
		v, _ = url.QueryUnescape(v)
		if k == "objectMeta" {
			continue
		}
		pairs = append(pairs, encodeQueryPart(k)+"="+encodeQueryPart(v))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// sign adds host, x-amz-date, x-amz-content-sha256 and a SigV4 Authorization over every
// header sent (but Expect).
func sign(method, path, query string, headers map[string]string) {
	g := cfg.Gateway
	now := time.Now().UTC()
	stamp, day := now.Format("20060102T150405Z"), now.Format("20060102")
	headers["host"] = cfg.Upstream
	headers["x-amz-date"] = stamp
	headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD"
	var names []string
	for name := range headers {
		if name != "expect" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var canon strings.Builder
	fmt.Fprintf(&canon, "%s\n%s\n%s\n", method, path, query)
	for _, name := range names {
		canon.WriteString(name + ":" + strings.Join(strings.Fields(headers[name]), " ") + "\n")
	}
	signed := strings.Join(names, ";")
	fmt.Fprintf(&canon, "\n%s\nUNSIGNED-PAYLOAD", signed)
	digest := sha256.Sum256([]byte(canon.String()))
	scope := day + "/" + g.Region + "/s3/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + stamp + "\n" + scope + "\n" + hex.EncodeToString(digest[:])
	key := hmacSHA256(hmacSHA256(hmacSHA256(hmacSHA256([]byte("AWS4"+g.UpSecret), day),
		g.Region), "s3"), "aws4_request")
	headers["authorization"] = fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		g.UpAccess, scope, signed, hex.EncodeToString(hmacSHA256(key, toSign)))
}

// readChunked: a chunked body, at most `limit` bytes, each chunk read into its own slice
// and joined once (no buffer doubling past the limit).
func readChunked(r *bufio.Reader, limit int64) ([]byte, error) {
	var parts [][]byte
	total := int64(0)
	for {
		line, err := r.ReadString('\n')
		if err != nil || len(line) > 1024 {
			return nil, fmt.Errorf("chunk line")
		}
		text, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		size, err := strconv.ParseInt(text, 16, 64)
		if err != nil || size < 0 || total+size > limit {
			return nil, fmt.Errorf("chunk size")
		}
		if size == 0 {
			for {
				t, err := r.ReadString('\n')
				if err != nil {
					return nil, err
				}
				if t == "\r\n" || t == "\n" {
					return bytes.Join(parts, nil), nil
				}
			}
		}
		part := make([]byte, size)
		if _, err := io.ReadFull(r, part); err != nil {
			return nil, err
		}
		parts, total = append(parts, part), total+size
		if _, err := r.ReadString('\n'); err != nil {
			return nil, err
		}
	}
}

// gatewayReply: the reply's head with OSS's names, its Content-Length kept (or `length`
// where >= 0: a body read whole).
func gatewayReply(reply *head, length int64) *head {
	lines := []string{reply.lines[0], "Date: " + time.Now().UTC().Format(
		"Mon, 02 Jan 2006 15:04:05 GMT") + "\r\n"}
	for _, line := range reply.lines[1:] {
		name, value, _ := strings.Cut(line, ":")
		low := strings.ToLower(strings.TrimSpace(name))
		switch {
		case hop[low]:
			continue
		case strings.HasPrefix(low, "x-amz-meta-"):
			name = "x-oss-meta-" + strings.TrimPrefix(low, "x-amz-meta-")
		case low == "x-amz-request-id":
			name = "x-oss-request-id"
		}
		lines = append(lines, name+":"+value)
	}
	if length < 0 {
		length = reply.length
	}
	if length >= 0 {
		lines = append(lines, "Content-Length: "+strconv.FormatInt(length, 10)+"\r\n")
	}
	next := *reply
	next.lines, next.length, next.chunked = lines, length, false
	return &next
}

// isListing: a reply whose body is XML to be read whole and rewritten for OSS clients.
func isListing(reply *head, method string) bool {
	if method == "HEAD" || (!reply.chunked && reply.length < 0) {
		return false
	}
	for _, line := range reply.lines[1:] {
		name, value, _ := strings.Cut(line, ":")
		if strings.EqualFold(strings.TrimSpace(name), "content-type") {
			return strings.HasSuffix(strings.TrimSpace(value), "xml")
		}
	}
	return false
}

// fixListing: OSS's XML has no namespace (ossfs 1.x finds nothing in S3's); OSS clients need
// each listed entry's <Type> and a LastModified in milliseconds.
func fixListing(body []byte) []byte {
	body = bytes.Replace(body, s3Namespace, nil, 1)
	if !bytes.Contains(body[:min(len(body), 512)], []byte("<ListBucketResult")) {
		return body
	}
	body = bytes.ReplaceAll(body, []byte("</Contents>"), []byte("<Type>Normal</Type></Contents>"))
	return lastModified.ReplaceAll(body, []byte("<LastModified>$1.000Z</LastModified>"))
}

// readBody: a reply's whole body (Content-Length or chunked), at most maxListing.
func readBody(r *bufio.Reader, h *head) ([]byte, error) {
	if h.chunked {
		return readChunked(r, maxListing)
	}
	if h.length > maxListing {
		return nil, fmt.Errorf("too large")
	}
	out := make([]byte, h.length)
	_, err := io.ReadFull(r, out)
	return out, err
}
