// Package s3store keeps the evidence and the call ledger in S3-compatible
// object storage (protocol §15): the same ports as osfs, for several
// servers sharing one body of evidence that none of them can rewrite.
//
// Every object is created by a conditional write (If-None-Match: *), so of
// any number of writers of one key exactly one succeeds, and nothing is
// ever overwritten or deleted: the credentials need no delete permission,
// and a bucket with Object Lock holds every object as it was written.
// There are no locks: the writer lock of protocol §6 and the ledger's
// flock have no meaning on a store, and nothing here needs them.
//
// Under the store's prefix P (s3://BUCKET/P), for an output directory O
// and a ledger L, both relative to P:
//
//	P/O/.attempt-N/result.json   the files one analyze staged (N is unique
//	P/O/.attempt-N/receipt.json  to that attempt; they stay where they
//	P/O/.attempt-N/…             were written, since nothing is moved)
//	P/O/RUN                      RUN's commit object: which attempt is RUN
//	P/L/00000000000000000001.json the ledger's record of seq 1, one line
//
// A run exists exactly when its commit object does: one conditional write
// makes it visible whole, and before it nothing under its name is read or
// listed as a run. An attempt that never committed (a crash, a loss of
// the race for the run ID) leaves files that no commit names: they are
// never read, and they block nothing. docs/decisions.md ("Evidence on
// object storage") gives the argument.
//
// A store that cannot be reached is never an answer: every failure to get
// one is [ports.ErrUnavailable], and a write whose answer was lost and
// could not be read back is [ports.ErrOutcomeUnknown] as well.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/metricproof/metricproof/adapters/internal/bounded"
	"github.com/metricproof/metricproof/ports"
)

// Errors of Open. Neither carries the SDK's own text, which may name a
// file of the machine.
var (
	// ErrURL: the store's URL is not s3://BUCKET or s3://BUCKET/PREFIX.
	ErrURL = ports.ErrStoreURL
	// ErrConfig: the standard AWS configuration could not be read, or
	// names no region.
	ErrConfig = ports.ErrStoreConfig
)

// Store is one bucket and key prefix of an S3-compatible object store. It
// implements ports.EvidenceStore and ports.LedgerStore; paths that cross
// those ports are relative to the prefix ("." is the prefix itself). It
// is safe for concurrent use.
type Store struct {
	client *s3.Client
	bucket string
	prefix string // "" or ending in "/"
	// timeout bounds each request (the SDK's own retries of a read
	// included); a write whose request ran out is read back before it is
	// called failed.
	timeout time.Duration

	// kept: the store was seen to refuse a create of a key that exists,
	// so it keeps If-None-Match (see keepsCondition).
	kept atomic.Bool

	mu    sync.Mutex
	heads map[string]uint64          // the highest seq seen of each ledger, by its key prefix
	runs  map[string]ports.ListedRun // committed runs already read, by commit key: a commit never changes
}

var (
	_ ports.EvidenceStore = (*Store)(nil)
	_ ports.LedgerStore   = (*Store)(nil)
)

// Open returns the store at rawURL, s3://BUCKET or s3://BUCKET/PREFIX,
// with the credentials, region and endpoint of the standard AWS
// environment and files (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_REGION, AWS_ENDPOINT_URL_S3, AWS_PROFILE, …); nothing else
// configures it. With an endpoint of its own (a self-hosted server) the
// bucket is addressed in the path, as such servers expect. Open makes no
// request: a store that cannot be reached shows at its first use.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	bucket, prefix, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	client, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	return newStore(client, bucket, prefix), nil
}

// newClient is the S3 client of the standard AWS environment and files:
// ErrConfig when they cannot be read or name no region.
func newClient(ctx context.Context) (*s3.Client, error) {
	// The SDK's logger writes to standard error, which belongs to the
	// transports: it is silenced, and every failure is an error value.
	cfg, err := config.LoadDefaultConfig(ctx, config.WithLogger(logging.Nop{}))
	if err != nil || cfg.Region == "" {
		return nil, ErrConfig
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = o.BaseEndpoint != nil
		o.DisableLogOutputChecksumValidationSkipped = true
	}), nil
}

// newStore is the store at bucket and prefix ("" or ending in "/") that
// client reaches.
func newStore(client *s3.Client, bucket, prefix string) *Store {
	return &Store{
		client:  client,
		bucket:  bucket,
		prefix:  prefix,
		timeout: 30 * time.Second,
		heads:   map[string]uint64{},
		runs:    map[string]ports.ListedRun{},
	}
}

// ParseURL splits s3://BUCKET/PREFIX into the bucket and the key prefix,
// "" or ending in "/". The bucket is 3 to 63 lowercase letters, digits,
// dots and hyphens, starting and ending with a letter or digit; the
// prefix is slash-separated names, none empty, "." or "..", without
// control characters, a backslash or any of ?#% (which would read as a
// URL's query, fragment or escape), and may end with one slash.
func ParseURL(rawURL string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(rawURL, "s3://")
	if !ok {
		return "", "", ErrURL
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if !validBucket(bucket) {
		return "", "", ErrURL
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return bucket, "", nil
	}
	if !validPath(prefix) {
		return "", "", ErrURL
	}
	return bucket, prefix + "/", nil
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '.' && c != '-' || i == 0 || i == len(b)-1) {
			return false
		}
	}
	return true
}

// validPath reports whether p is a relative slash path of plain names
// (fs.ValidPath's rule) without control characters, a backslash or ?#%,
// so that it means one key prefix, the same to every S3 server and to
// whoever reads it as a URL.
func validPath(p string) bool {
	if !fs.ValidPath(p) || p == "." {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(`\?#%`, r) {
			return false
		}
	}
	return true
}

// dirKey is the key prefix of rel, a directory relative to the store's
// prefix: "" or ending in "/". A rel that is not a plain relative path is
// ErrOutside.
func (s *Store) dirKey(rel string) (string, error) {
	if rel == "." || rel == "" {
		return s.prefix, nil
	}
	if !validPath(rel) {
		return "", ports.ErrOutside
	}
	return s.prefix + rel + "/", nil
}

// validName reports whether name is one path element, fit to end a key.
func validName(name string) bool {
	return validPath(name) && !strings.Contains(name, "/")
}

// Ready checks that the store answers, with one listing of its prefix
// (the read that /readyz makes, protocol §14).
func (s *Store) Ready(ctx context.Context) error { return s.readyAt(ctx, ".") }

// readyAt is Ready for the directory rel below the prefix.
func (s *Store) readyAt(ctx context.Context, rel string) error {
	dir, err := s.dirKey(rel)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err = s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &dir, MaxKeys: aws.Int32(1)})
	return classify(err)
}

// get reads the object key, at most limitBytes of it: ports.ErrMissing
// when there is none, and ports.ErrTooLarge when it holds more, unless cut
// is set, when the first limitBytes are returned.
func (s *Store) get(ctx context.Context, key string, limitBytes int64, cut bool) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		// Only the store's own word for it: versitygw answers an unknown
		// access key with a 404 of another code, which is no verdict.
		if code(err) == "NoSuchKey" {
			return nil, ports.ErrMissing
		}
		return nil, classify(err)
	}
	defer out.Body.Close()
	size := aws.ToInt64(out.ContentLength)
	if cut {
		data, err := io.ReadAll(io.LimitReader(out.Body, limitBytes))
		if err != nil {
			return nil, unavailable(err)
		}
		return data, nil
	}
	if size > limitBytes {
		return nil, ports.ErrTooLarge // without reading it
	}
	data, err := bounded.Read(out.Body, limitBytes, size)
	if err != nil && !errors.Is(err, ports.ErrTooLarge) {
		return nil, unavailable(err)
	}
	return data, err
}

// list calls visit with the name (relative to dir) and size of each
// object directly under the key prefix dir whose key sorts after
// startAfter, in key order, until visit returns false or none is left.
func (s *Store) list(ctx context.Context, dir, startAfter string, pageKeys int32, visit func(name string, size int64) bool) error {
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &dir, Delimiter: aws.String("/"), MaxKeys: &pageKeys}
	if startAfter != "" {
		in.StartAfter = &startAfter
	}
	pages := s3.NewListObjectsV2Paginator(s.client, in)
	for pages.HasMorePages() {
		pctx, cancel := context.WithTimeout(ctx, s.timeout)
		page, err := pages.NextPage(pctx)
		cancel()
		if err != nil {
			return classify(err)
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), dir)
			if !visit(name, aws.ToInt64(o.Size)) {
				return nil
			}
		}
	}
	return nil
}

// createTries is how often create sends one write before it gives up.
const createTries = 3

// create makes the object key hold data, unless an object is there
// already: the one kind of write this package makes. It is a conditional
// write (If-None-Match: *), so of many writers of one key exactly one
// succeeds; a loser gets ports.ErrExists.
//
// The SDK's own retries are off for it, so that every try is seen: a try
// whose answer never came may have taken effect. A refusal because the
// key exists after such a try is read back, and bytes equal to data are
// this call's own write (the key is unique to this writer's attempt, or
// data holds what it alone wrote). When every try failed and one may have
// been carried out, one read tells; when that read fails, or finds nothing
// while a try that got no answer may still land, the error is
// ports.ErrOutcomeUnknown as well as ports.ErrUnavailable.
func (s *Store) create(ctx context.Context, key string, data []byte) error {
	// maybeSent: a try may have been carried out (no answer came, or a
	// server error); inFlight: one may still be (no answer came at all),
	// so that an object not there yet is no proof of anything.
	maybeSent, inFlight := false, false
	var last error
	for try := range createTries {
		// Jittered, so that two writers refused together (409) part.
		if try > 0 && !sleep(ctx, time.Duration(50<<try)*time.Millisecond+rand.N(50*time.Millisecond)) {
			break
		}
		err := s.put(ctx, key, data)
		switch {
		case err == nil:
			return nil
		case status(err) == 412 && !maybeSent:
			return ports.ErrExists // no earlier try of this call's could have made it
		case status(err) == 412:
			return s.ours(ctx, key, data)
		case code(err) == "ConditionalRequestConflict", status(err) >= 500, status(err) == 429:
			// The store answered: another conditional write of the key
			// was under way (AWS's 409), or it failed, and a failure
			// of its own may hide a write: read back below.
			maybeSent = maybeSent || status(err) >= 500
			last = err
		case status(err) != 0:
			return classify(err) // a refusal: nothing was written
		default:
			sent := !notSent(err)
			maybeSent, inFlight = maybeSent || sent, inFlight || sent
			last = err
		}
	}
	if !maybeSent {
		return unavailable(last)
	}
	// Read with a context of its own: a caller who gave up still needs
	// the truth about what was written.
	got, err := s.get(context.WithoutCancel(ctx), key, int64(len(data)), false)
	switch {
	case err == nil && bytes.Equal(got, data):
		return nil
	case err == nil, errors.Is(err, ports.ErrTooLarge):
		return ports.ErrExists
	case errors.Is(err, ports.ErrMissing) && !inFlight:
		return unavailable(last) // every try was answered, and none wrote
	}
	return fmt.Errorf("%w: %w", ports.ErrOutcomeUnknown, unavailable(last))
}

// put sends one conditional write of data to key, with its SHA256 for the
// store to check and keep (Object Lock requires a checksum on a write).
func (s *Store) put(ctx context.Context, key string, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:            &s.bucket,
		Key:               &key,
		Body:              bytes.NewReader(data),
		ContentLength:     aws.Int64(int64(len(data))),
		IfNoneMatch:       aws.String("*"),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
	}, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	return err
}

// keepsCondition asks the store, once, whether it keeps If-None-Match, by
// creating key, which holds data and was made by this Store, once more:
// a store that keeps the condition refuses (412), and one that does not
// overwrites it with the same bytes, and then no write is safe
// (ports.ErrNoReplaceUnsupported). S3-compatible servers took the header
// and ignored it before AWS brought conditional writes, and some still do:
// on one of them two servers committing one run ID were each told they
// had, the second's commit over the first's, and two appenders of one seq
// each had a record that only one kept.
func (s *Store) keepsCondition(ctx context.Context, key string, data []byte) error {
	if s.kept.Load() {
		return nil
	}
	err := s.put(ctx, key, data)
	switch {
	case status(err) == 412:
		s.kept.Store(true)
		return nil
	case err == nil:
		return fmt.Errorf("%w: the store overwrote an object that a write with If-None-Match: * must leave alone; it cannot keep evidence that is never replaced", ports.ErrNoReplaceUnsupported)
	}
	return classify(err)
}

// ours tells, after a refusal because key exists that followed a try
// whose answer was lost, whether what is there is data (that try's
// write): nil, or ports.ErrExists.
func (s *Store) ours(ctx context.Context, key string, data []byte) error {
	got, err := s.get(context.WithoutCancel(ctx), key, int64(len(data)), false)
	switch {
	case err == nil && bytes.Equal(got, data):
		return nil
	case err == nil, errors.Is(err, ports.ErrTooLarge), errors.Is(err, ports.ErrMissing):
		// Missing: a key refused as existing that then reads as
		// absent is a "directory" of a posix-backed server, or was
		// deleted by someone else; either way not this writer's.
		return ports.ErrExists
	}
	// The key exists; whether that lost try made it could not be read.
	return fmt.Errorf("%w: %w", ports.ErrOutcomeUnknown, err)
}

// sleep waits d, or less when ctx is done first: then it reports false.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// status is the HTTP status of the store's answer, 0 when none came.
func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// code is the store's error code ("NoSuchKey", "AccessDenied", …), "" when
// it gave none, or gave text that is no code: a code is shown in messages,
// and a store (or what answers in its place) may put anything there, the
// endpoint, a key or a line break included.
func code(err error) string {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return ""
	}
	c := ae.ErrorCode()
	if len(c) > 64 {
		return ""
	}
	for i := 0; i < len(c); i++ {
		if b := c[i]; !(b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '.') {
			return ""
		}
	}
	return c
}

// notSent reports a failure that happened before any byte of the request
// could reach the store: the connection was never made.
func notSent(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &dns)
}

// classify turns an SDK error into the ports' words. Error codes are the
// store's, safe to show; the SDK's own text, which names the endpoint and
// the key, is never passed on.
func classify(err error) error {
	if err == nil {
		return nil
	}
	c, st := code(err), status(err)
	switch {
	case c == "NoSuchBucket":
		return ports.ErrNoBucket
	case c == "AccessDenied", c == "InvalidAccessKeyId", c == "SignatureDoesNotMatch", c == "ExpiredToken",
		c == "InvalidToken", c == "TokenRefreshRequired", c == "AllAccessDisabled", c == "AccountProblem", st == 403,
		c == "XAdminUserNotFound": // versitygw's unknown access key
		return fmt.Errorf("%w: %w (the store answered %s)", ports.ErrStoreDenied, ports.ErrPermission, codeOr(c, st))
	case c == "ExistingObjectIsDirectory":
		return ports.ErrExists // a posix-backed server's "directory" at the key
	case c == "ObjectParentIsFile":
		return ports.ErrNotDir // an object where a prefix of the key should be
	case c == "NotImplemented" && st == 501:
		return ports.ErrNoReplaceUnsupported // no conditional writes: no write is safe
	case st >= 500, st == 429, c == "SlowDown", c == "RequestTimeout":
		return unavailable(err)
	case c == "" && broken(err):
		// A status came, and the error document after it did not: the
		// answer is unread, not a refusal of the store's.
		return unavailable(err)
	case st != 0:
		return fmt.Errorf("the store refused the request (%s)", codeOr(c, st))
	case errors.Is(err, context.Canceled):
		return context.Canceled
	}
	return unavailable(err)
}

// broken reports a failure of the connection or of the time allowed,
// rather than an answer.
func broken(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &netErr)
}

func codeOr(c string, st int) string {
	if c != "" {
		return c
	}
	return fmt.Sprintf("HTTP %d", st)
}

// unavailable is ports.ErrUnavailable with what kind of failure it was.
func unavailable(err error) error {
	var why string
	var netErr net.Error
	switch {
	case err == nil:
		return ports.ErrUnavailable
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		why = "no answer in time"
	case status(err) != 0:
		why = codeOr(code(err), status(err))
	case notSent(err):
		why = "no connection"
	default:
		why = "the connection failed"
	}
	return fmt.Errorf("%w (%s)", ports.ErrUnavailable, why)
}
