package s3store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/adapters/s3store"
	"github.com/metricproof/metricproof/adapters/s3store/s3test"
	"github.com/metricproof/metricproof/ports"
)

// serve starts a real S3 server (versitygw) with an empty bucket and sets
// the standard AWS environment so that stores opened now reach it with
// the root account's keys.
func serve(t *testing.T, bucket string) *s3test.Server {
	t.Helper()
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, bucket, 0)
	srv.RootEnv(t)
	return srv
}

// opener returns a function that opens a store on the bucket, each time
// on a key prefix no other store of the test uses: a fresh, empty store.
func opener(bucket string) func(t *testing.T) *s3store.Store {
	n := 0
	return func(t *testing.T) *s3store.Store {
		t.Helper()
		n++
		return open(t, fmt.Sprintf("s3://%s/t%d", bucket, n))
	}
}

// open opens the store at url with the environment as it is.
func open(t *testing.T, url string) *s3store.Store {
	t.Helper()
	store, err := s3store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func TestRunsContract(t *testing.T) {
	serve(t, "evidence")
	fresh := opener("evidence")
	porttest.Runs(t, func(t *testing.T) ports.EvidenceStore { return fresh(t) })
}

func TestRecordsContract(t *testing.T) {
	serve(t, "ledger")
	fresh := opener("ledger")
	porttest.Records(t, func(t *testing.T) ports.LedgerStore { return fresh(t) })
}
