package s3store_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/adapters/s3store"
	"github.com/metricproof/metricproof/adapters/s3store/s3test"
	"github.com/metricproof/metricproof/ports"
)

// sent is one request a store sent, as the proxy saw it.
type sent struct {
	method, path string
	query        url.Values
	ifNoneMatch  string
}

func TestEveryRequestTheStoreSendsIsAReadOrACreateNeverADeleteOrAnOverwrite(t *testing.T) {
	// Everything the app does with a store, seen on the wire: the
	// promise "never overwritten, never deleted" is about what the
	// program asks for, whatever the bucket would allow.
	is := is.New(t)
	srv := serve(t, "audit")
	var mu sync.Mutex
	var log []sent
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Proxy(t, func(r *http.Request) s3test.Fault {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, sent{r.Method, r.URL.Path, r.URL.Query(), r.Header.Get("If-None-Match")})
		return s3test.Pass
	}))
	a, b := open(t, "s3://audit/team"), open(t, "s3://audit/team")
	commitRun(t, a, "runs", "r1")
	w, err := b.OpenWriter("runs")
	is.NoErr(err)
	is.NoErr(w.Stage(runFiles("r1")))
	is.True(errors.Is(w.Commit("r1"), ports.ErrExists)) // a collision
	w, err = b.OpenWriter("runs")
	is.NoErr(err)
	is.NoErr(w.Stage(runFiles("r2")))
	is.NoErr(w.Close()) // an abandoned attempt
	_, err = b.ReadRun("runs", "r1", runNames, 1024)
	is.NoErr(err)
	_, err = b.ListRuns("runs")
	is.NoErr(err)
	var wg sync.WaitGroup
	for _, store := range []*s3store.Store{a, b, a, b} { // appenders racing
		wg.Go(func() { is.NoErr(appendLine(store, "ledger", "x\n")) })
	}
	wg.Wait()
	is.NoErr(a.ScanLedger(context.Background(), "ledger", func([]byte) error { return nil }))
	is.NoErr(b.Ready(context.Background()))

	puts := 0
	for _, r := range log {
		switch r.method {
		case http.MethodGet:
		case http.MethodPut:
			puts++
			is.Equal(r.ifNoneMatch, "*")                                 // every write is a create
			is.Equal(r.query, url.Values{"x-id": []string{"PutObject"}}) // a plain PutObject: no part, tag, retention or ACL
		default:
			t.Errorf("the store sent %s %s", r.method, r.path)
		}
	}
	is.True(puts >= 3+1+3+3+4) // the test saw the writes
}

func TestOnALockedBucketAUserWhoMayNotDeleteKeepsEveryPromise(t *testing.T) {
	// Object Lock in compliance mode with a default retention, and
	// credentials that may create, read and list and nothing else: the
	// deployment docs/decisions.md recommends.
	srv := s3test.Start(t, s3test.Options{IAM: true})
	srv.Bucket(t, "vault", 1)
	srv.User(t, "vault", "writer", "writer-secret")
	srv.Env(t, "writer", "writer-secret")
	fresh := opener("vault")
	t.Run("runs", func(t *testing.T) {
		porttest.Runs(t, func(t *testing.T) ports.EvidenceStore { return fresh(t) })
	})
	t.Run("records", func(t *testing.T) {
		porttest.Records(t, func(t *testing.T) ports.LedgerStore { return fresh(t) })
	})

	is := is.New(t)
	store := fresh(t)
	commitRun(t, store, ".", "r1")
	bucket := "vault"
	listed, err := srv.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &bucket})
	is.NoErr(err)
	var key string
	for _, o := range listed.Contents {
		if strings.HasSuffix(*o.Key, "/r1") {
			key = *o.Key
		}
	}
	is.True(key != "") // the commit object
	_, err = srv.ClientAs("writer", "writer-secret").DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &bucket, Key: &key})
	is.Equal(apiCode(err), "AccessDenied") // the program's credentials may not delete

	versions, err := srv.Client().ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: &bucket, Prefix: &key})
	is.NoErr(err)
	is.Equal(len(versions.Versions), 1)
	v := versions.Versions[0]
	_, err = srv.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &bucket, Key: &key, VersionId: v.VersionId})
	is.Equal(apiCode(err), "AccessDenied") // nor may the bucket's owner remove the version the program wrote
	var ae smithy.APIError
	is.True(errors.As(err, &ae) && strings.Contains(ae.ErrorMessage(), "object lock")) // and the lock is why
	run, err := store.ReadRun(".", "r1", runNames, 1024)
	is.NoErr(err)
	is.True(run.Exists && run.Dir) // still the run
}

// apiCode is the store's error code of err, "" for none.
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
