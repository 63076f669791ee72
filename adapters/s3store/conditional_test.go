package s3store_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/s3store/s3test"
	"github.com/metricproof/metricproof/ports"
)

// unconditional is a store that takes If-None-Match and does not keep it,
// as S3-compatible servers did before AWS brought conditional writes
// (2024) and some still do: versitygw behind a proxy that drops the
// header from every PUT and signs the request again, so the server
// overwrites whatever is there.
func unconditional(t *testing.T, srv *s3test.Server) string {
	t.Helper()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	signer := v4.NewSigner()
	creds := aws.Credentials{AccessKeyID: srv.Access, SecretAccessKey: srv.Secret}
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.Header.Get("If-None-Match") != "" {
			r.Header.Del("If-None-Match")
			r.Header.Del("Authorization")
			r.URL.Scheme, r.URL.Host = "http", r.Host
			if err := signer.SignHTTP(r.Context(), creds, r, r.Header.Get("X-Amz-Content-Sha256"), "s3", "us-east-1", time.Now()); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			r.URL.Scheme, r.URL.Host = "", ""
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p.URL
}

// On a store that does not keep If-None-Match, a write is an overwrite:
// two servers committing one run ID were both told they committed it, and
// the second's commit replaced the first's, evidence and all. The store
// now asks, once, whether the server keeps the condition (a create of one
// of its own attempt's files, again, must be refused) and refuses to
// commit on one that does not: ErrNoReplaceUnsupported, nothing
// committed.
func TestAStoreThatDoesNotKeepIfNoneMatchCommitsNothing(t *testing.T) {
	srv := serve(t, "nocond")
	t.Setenv("AWS_ENDPOINT_URL_S3", unconditional(t, srv))
	stores := []ports.EvidenceStore{open(t, "s3://nocond/out"), open(t, "s3://nocond/out")}
	is := is.New(t)
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, store := range stores {
		w, err := store.OpenWriter(".")
		is.NoErr(err)
		wg.Go(func() {
			if errs[i] = w.Stage(runFiles(string(rune('a' + i)))); errs[i] == nil {
				errs[i] = w.Commit("r1")
			}
		})
	}
	wg.Wait()
	t.Logf("the two commits: %v", errs)
	for _, err := range errs {
		is.True(errors.Is(err, ports.ErrNoReplaceUnsupported)) // neither is told it committed
	}
	run, err := stores[0].ReadRun(".", "r1", runNames, 1024)
	is.NoErr(err)
	is.True(!run.Exists) // and nothing was
}

// The ledger on such a store: two appenders of one seq would each be told
// their record landed, one of them overwritten. An append to a ledger with
// a head asks the store first, by creating the head again (its own bytes,
// which a store that keeps the condition refuses), and refuses on one that
// does not.
func TestALedgerOnAStoreThatDoesNotKeepIfNoneMatchTakesNoRecord(t *testing.T) {
	is := is.New(t)
	srv := serve(t, "nocondl")
	seed := open(t, "s3://nocondl/p")
	is.NoErr(appendLine(seed, "ledger", "one\n"))
	t.Setenv("AWS_ENDPOINT_URL_S3", unconditional(t, srv))
	store := open(t, "s3://nocondl/p")
	err := appendLine(store, "ledger", "two\n")
	t.Logf("the append: %v", err)
	is.True(errors.Is(err, ports.ErrNoReplaceUnsupported))
	var lines []string
	is.NoErr(seed.ScanLedger(context.Background(), "ledger", func(l []byte) error { lines = append(lines, string(l)); return nil }))
	is.Equal(lines, []string{"one\n"}) // no record taken, the head as it was
}
