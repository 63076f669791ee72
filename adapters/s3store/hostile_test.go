package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/s3store"
	"github.com/metricproof/metricproof/adapters/s3store/s3test"
	"github.com/metricproof/metricproof/ports"
)

// counter is a proxy in front of the server that counts the bytes of the
// answers' bodies it hands to the store, and can stall an answer's body
// after some bytes.
type counter struct {
	sent  atomic.Int64
	stall atomic.Int64 // > 0: the body of a GET stalls after this many bytes
}

type countingBody struct {
	r     io.ReadCloser
	c     *counter
	stall int64
	done  <-chan struct{}
	n     int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.stall > 0 && b.n >= b.stall {
		<-b.done // the client gave up
		return 0, io.ErrUnexpectedEOF
	}
	if b.stall > 0 && int64(len(p)) > b.stall-b.n {
		p = p[:b.stall-b.n]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	b.c.sent.Add(int64(n))
	return n, err
}

func (b *countingBody) Close() error { return b.r.Close() }

// proxy starts c in front of srv and returns its endpoint.
func (c *counter) proxy(t *testing.T, srv *s3test.Server) string {
	t.Helper()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stall := int64(0)
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "" {
			stall = c.stall.Load()
		}
		inner := httputil.NewSingleHostReverseProxy(target)
		inner.FlushInterval = -1
		inner.ErrorLog = log.New(io.Discard, "", 0)
		inner.ModifyResponse = func(res *http.Response) error {
			res.Body = &countingBody{r: res.Body, c: c, stall: stall, done: r.Context().Done()}
			return nil
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p.URL
}

// A huge object where a small one is expected is never read whole: a
// commit, a record and a run's file each stop at their bound, and what
// reaches the store is about that bound, not the object.
func TestAHugeObjectWhereASmallOneIsExpectedIsNotReadWhole(t *testing.T) {
	srv := serve(t, "huge")
	const huge = 64 << 20
	big := bytes.Repeat([]byte("x"), huge)
	bucket := "huge"
	for _, key := range []string{"p/runs/r1", "p/ledger/00000000000000000001.json"} {
		k := key
		_, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &k, Body: bytes.NewReader(big)})
		if err != nil {
			t.Fatal(err)
		}
	}
	// r3: a good commit whose files are huge.
	put(t, srv, "huge", "p/runs/r3", commitObject("r3", attempt, runNames...))
	for _, name := range runNames {
		k := "p/runs/" + s3store.AttemptPrefix + attempt + "/" + name
		_, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &k, Body: bytes.NewReader(big)})
		if err != nil {
			t.Fatal(err)
		}
	}
	var c counter
	t.Setenv("AWS_ENDPOINT_URL_S3", c.proxy(t, srv))
	store := open(t, "s3://huge/p")
	ctx := context.Background()
	// What reaches the store is the bound plus what the sockets of two
	// loopback hops buffer (megabytes, by the kernel's autotuning): far
	// less than the object, which is what the test tells apart.
	const bound = huge / 3
	tests := []struct {
		name string
		use  func(is *is.I)
	}{
		{"a commit", func(is *is.I) {
			run, err := store.ReadRun("runs", "r1", runNames, 1024)
			is.NoErr(err)
			is.Equal(run, ports.SavedRun{Exists: true}) // there, not a run
		}},
		{"a commit, asked whether it exists", func(is *is.I) {
			w, err := store.OpenWriter("runs")
			is.NoErr(err)
			exists, err := w.Exists("r1")
			is.NoErr(err)
			is.True(exists)
		}},
		{"a run's files", func(is *is.I) {
			run, err := store.ReadRun("runs", "r3", runNames, 4<<20)
			is.NoErr(err)
			for _, f := range run.Files {
				is.True(errors.Is(f.Err, ports.ErrTooLarge))
			}
		}},
		{"a record", func(is *is.I) {
			last, err := store.LastLine(ctx, "ledger")
			is.NoErr(err)
			is.Equal(len(last), 64<<10) // cut at the line's bound
		}},
		{"a scan", func(is *is.I) {
			is.NoErr(store.ScanLedger(ctx, "ledger", func(l []byte) error { is.Equal(len(l), 64<<10); return nil }))
		}},
		{"a listing", func(is *is.I) {
			_, err := store.ListRuns("runs")
			is.NoErr(err)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c.sent.Store(0)
			tt.use(is)
			t.Logf("%d bytes reached the store of objects of %d", c.sent.Load(), huge)
			is.True(c.sent.Load() <= bound) // never the whole object
		})
	}
}

// A store that stalls in the middle of an answer's body is no answer: each
// read ends within the request's time as ErrUnavailable, never as a
// verdict or a cut-short file.
func TestAStoreThatStallsMidBodyGivesNoVerdict(t *testing.T) {
	srv := serve(t, "stall")
	seed := open(t, "s3://stall/p")
	commitRun(t, seed, ".", "r1")
	if err := appendLine(seed, "ledger", strings.Repeat("a", 4000)+"\n"); err != nil {
		t.Fatal(err)
	}
	var c counter
	c.stall.Store(10)
	t.Setenv("AWS_ENDPOINT_URL_S3", c.proxy(t, srv))
	for _, u := range everyUse() {
		if u.name == "stage a run" || u.name == "append a record" || u.name == "check readiness" || u.name == "list the runs" {
			continue // a write or a listing: no GET body to stall
		}
		t.Run(u.name, func(t *testing.T) {
			is := is.New(t)
			store := open(t, "s3://stall/p")
			s3store.SetTimeout(store, 300*time.Millisecond)
			start := time.Now()
			err := u.use(store)
			t.Logf("%s: %v after %v", u.name, err, time.Since(start).Round(time.Millisecond))
			is.True(errors.Is(err, ports.ErrUnavailable)) // no verdict
		})
	}
}

// fault is a proxy that answers every request with status and an S3
// error document of code (no body when code is "").
func fault(t *testing.T, status int, code string) string {
	t.Helper()
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code == "" {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, code)
	}))
	t.Cleanup(p.Close)
	return p.URL
}

// What each answer of a store becomes at the port: only the store's own
// NoSuchKey is "not there"; every other answer is an error, never a
// verdict, and a refusal is never an outcome unknown. The error's text
// holds the store's code only when it is one (letters and digits), never
// the endpoint, a key, or text the store put in its place.
func TestEachAnswerOfTheStoreIsWhatThePortSays(t *testing.T) {
	srv := serve(t, "answers")
	seed := open(t, "s3://answers/p")
	commitRun(t, seed, ".", "r1")
	if err := appendLine(seed, "ledger", "one\n"); err != nil {
		t.Fatal(err)
	}
	srv.RootEnv(t)
	hostile := "Leak " + srv.Endpoint + "/answers/p/r1 AKIASECRETSECRET\n&lt;b&gt;"
	tests := []struct {
		status int
		code   string
		want   error // nil: an error of its own, that is none of the ports'
	}{
		{403, "AccessDenied", ports.ErrPermission},
		{403, "", ports.ErrPermission},
		{404, "NoSuchBucket", ports.ErrNoBucket},
		{404, "", nil},
		{404, "NoSuchVersion", nil},
		{400, "InvalidRequest", nil},
		{412, "PreconditionFailed", nil},
		{301, "PermanentRedirect", nil},
		{500, "InternalError", ports.ErrUnavailable},
		{503, "SlowDown", ports.ErrUnavailable},
		{503, "", ports.ErrUnavailable},
		{429, "", ports.ErrUnavailable},
		{500, hostile, ports.ErrUnavailable},
		{403, hostile, ports.ErrPermission},
		{400, hostile, nil},
	}
	for _, tt := range tests {
		for _, u := range everyUse() {
			name := fmt.Sprintf("%d %.20s: %s", tt.status, tt.code, u.name)
			t.Run(name, func(t *testing.T) {
				is := is.New(t)
				t.Setenv("AWS_ENDPOINT_URL_S3", fault(t, tt.status, tt.code))
				store := open(t, "s3://answers/p")
				if tt.status >= 500 || tt.status == 429 {
					// The client retries these: a short timeout keeps the
					// case quick. Any other answer is final at once, and a
					// timeout there would turn it into ErrUnavailable on a
					// busy machine.
					s3store.SetTimeout(store, 500*time.Millisecond)
				}
				err := u.use(store)
				is.True(err != nil) // never a verdict
				if tt.want != nil {
					is.True(errors.Is(err, tt.want))
				}
				for _, port := range []error{ports.ErrMissing, ports.ErrExists} {
					is.True(!errors.Is(err, port)) // not "not there", not "taken"
				}
				// A write the store failed with a 5xx, and whose read-back
				// failed too, may have been made: it alone may say so.
				maybe := tt.status >= 500 && (u.name == "stage a run" || u.name == "append a record")
				is.True(maybe || !errors.Is(err, ports.ErrOutcomeUnknown))
				msg := err.Error()
				is.True(!strings.Contains(msg, srv.Endpoint)) // no endpoint
				is.True(!strings.Contains(msg, "AKIA"))       // nothing the store said in a code's place
				is.True(!strings.Contains(msg, "answers/p"))  // no key
				is.True(!strings.ContainsAny(msg, "\n<"))
			})
		}
	}
}

// An output directory full of objects that are no run (a ledger kept in
// it, notes, a copy from a disk) costs one listing, not one read each:
// only a name a run ID can take is read as a commit. Each listing used
// to read every object of up to 64 KiB there, every time, since only
// commits are remembered.
func TestListingRunsReadsOnlyWhatCouldBeARun(t *testing.T) {
	is := is.New(t)
	srv := serve(t, "clutter")
	seed := open(t, "s3://clutter/p")
	commitRun(t, seed, "runs", "r1")
	for i := range 120 {
		if err := appendLine(seed, "runs", fmt.Sprintf("record %d\n", i)); err != nil { // a ledger in the output directory
			t.Fatal(err)
		}
	}
	put(t, srv, "clutter", "p/runs/notes.txt", "hello")
	put(t, srv, "clutter", "p/runs/.hidden", "x")
	var gets atomic.Int64
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Proxy(t, func(r *http.Request) s3test.Fault {
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "" {
			gets.Add(1)
		}
		return s3test.Pass
	}))
	store := open(t, "s3://clutter/p")
	for range 2 {
		listed, err := store.ListRuns("runs")
		is.NoErr(err)
		is.Equal(listed, []ports.ListedRun{{Name: "r1", ResultBytes: int64(len(runFiles("r1")[0].Data))}})
	}
	is.Equal(gets.Load(), int64(1)) // the one commit, once
}

// On a bucket with Object Lock (so versioned), a plain PUT by someone
// else over a committed run makes new current versions and leaves the
// program's locked versions in place. The store reads current versions
// (protocol §15.2: a file changed since its commit is read as it now is),
// so a rewritten commit that names a forged attempt is read as the run:
// verify's checksums, and for a consistent forgery only a signature,
// judge it, as on disk. The program's own versions stay for an auditor.
// (A commit that pinned version IDs would have verify vouch for bytes
// that a plain download of the run no longer returns; see the report of
// the adversarial pass.)
func TestAPlainPutOverALockedRunIsReadAsItNowIsAndTheOriginalStays(t *testing.T) {
	is := is.New(t)
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "locked", 1)
	srv.RootEnv(t)
	store := open(t, "s3://locked/p")
	commitRun(t, store, ".", "r1")
	const forged = "fedcba9876543210fedcba98"
	for _, f := range runFiles("forged") {
		put(t, srv, "locked", "p/"+s3store.AttemptPrefix+forged+"/"+f.Name, string(f.Data))
	}
	put(t, srv, "locked", "p/r1", commitObject("r1", forged, runNames...))
	run, err := open(t, "s3://locked/p").ReadRun(".", "r1", runNames, 1024)
	is.NoErr(err)
	is.True(run.Exists && run.Dir)
	is.Equal(string(run.Files[0].Data), string(runFiles("forged")[0].Data)) // the current version, as it now is
	bucket, key := "locked", "p/r1"
	versions, err := srv.Client().ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: &bucket, Prefix: &key})
	is.NoErr(err)
	is.Equal(len(versions.Versions), 2) // the program's commit is still there, under the forgery
}

// A prefix that is the start of another names another store: s3://b/runs
// and s3://b/runs2 share no run and no record, and no rel given to a
// store leaves its prefix.
func TestAPrefixThatStartsAnotherSharesNothingWithIt(t *testing.T) {
	is := is.New(t)
	serve(t, "prefixes")
	runs, runs2 := open(t, "s3://prefixes/runs"), open(t, "s3://prefixes/runs2")
	commitRun(t, runs, ".", "r1")
	is.NoErr(appendLine(runs, "ledger", "one\n"))
	run, err := runs2.ReadRun(".", "r1", runNames, 1024)
	is.NoErr(err)
	is.True(!run.Exists)
	listed, err := runs2.ListRuns(".")
	is.NoErr(err)
	is.Equal(len(listed), 0)
	last, err := runs2.LastLine(context.Background(), "ledger")
	is.NoErr(err)
	is.Equal(last, []byte(nil))
	for _, rel := range []string{"../runs", "..", "a/../../runs", "/runs", "a//b", "a\\b", "%2e%2e", "a/./b", "a\x00b", "a?b", "a#b"} {
		_, err := runs2.ReadRun(rel, "r1", runNames, 1024)
		is.True(errors.Is(err, ports.ErrOutside)) // refused, not read
		_, err = runs2.OpenLedger(rel)
		is.True(errors.Is(err, ports.ErrOutside))
		_, err = runs2.OpenWriter(rel)
		is.True(errors.Is(err, ports.ErrOutside))
	}
	for _, id := range []string{"..", "../r1", "r1/x", ".", "", "r1\x00"} {
		_, err := runs2.ReadRun(".", id, runNames, 1024)
		is.True(errors.Is(err, ports.ErrOutside))
	}
}
