package s3store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/porttest"
	"github.com/metricproof/metricproof/adapters/s3store"
	"github.com/metricproof/metricproof/adapters/s3store/s3test"
	"github.com/metricproof/metricproof/ports"
)

// connect connects to the stores of the environment as it is.
func connect(t *testing.T) *s3store.Buckets {
	t.Helper()
	b, err := s3store.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// atURL is Buckets seen through paths relative to one URL, as the port
// suites name places: each of its places is base + "/" + rel, the URL
// the app would hand Buckets for it.
type atURL struct {
	b    *s3store.Buckets
	base string
}

func (a atURL) url(rel string) string {
	if rel == "." {
		return a.base
	}
	return a.base + "/" + rel
}

func (a atURL) OpenWriter(dir string) (ports.EvidenceWriter, error) {
	return a.b.OpenWriter(a.url(dir))
}

func (a atURL) ReadRun(dir, runID string, names []string, limitBytes int64) (ports.SavedRun, error) {
	return a.b.ReadRun(a.url(dir), runID, names, limitBytes)
}

func (a atURL) ListRuns(dir string) ([]ports.ListedRun, error) { return a.b.ListRuns(a.url(dir)) }

func (a atURL) OpenLedger(rel string) (ports.Ledger, error) { return a.b.OpenLedger(a.url(rel)) }

// Places named by URL, in a bucket's root and below a prefix, keep the
// promises the app relies on, as a Store opened on one does.
func TestEveryPlaceABucketsURLNamesKeepsTheContracts(t *testing.T) {
	srv := serve(t, "urls")
	srv.Bucket(t, "second", 0)
	b := connect(t)
	n := 0
	fresh := func(bucket string) func(t *testing.T) atURL {
		return func(t *testing.T) atURL {
			n++
			if n%2 == 0 {
				return atURL{b: b, base: fmt.Sprintf("s3://%s/t%d", bucket, n)}
			}
			return atURL{b: b, base: fmt.Sprintf("s3://%s/team/p/t%d", bucket, n)}
		}
	}
	t.Run("runs", func(t *testing.T) {
		next := fresh("urls")
		porttest.Runs(t, func(t *testing.T) ports.EvidenceStore { return next(t) })
	})
	t.Run("records", func(t *testing.T) {
		next := fresh("second")
		porttest.Records(t, func(t *testing.T) ports.LedgerStore { return next(t) })
	})
	t.Run("a bucket's root", func(t *testing.T) {
		is := is.New(t)
		srv.Bucket(t, "rooted", 0)
		commitAt(t, b, "s3://rooted", "r1", "{}\n")
		run, err := b.ReadRun("s3://rooted", "r1", []string{ports.ResultFile}, 1024)
		is.NoErr(err)
		is.True(run.Exists && run.Dir)
		is.Equal(string(run.Files[0].Data), "{}\n")
	})
}

// commitAt commits a run of one result file in the output directory dir,
// a URL, and returns where the writer says the file lies.
func commitAt(t *testing.T, b *s3store.Buckets, dir, runID, result string) string {
	t.Helper()
	w, err := b.OpenWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Stage([]ports.File{{Name: ports.ResultFile, Data: []byte(result)}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(runID); err != nil {
		t.Fatal(err)
	}
	return w.Where(runID, ports.ResultFile)
}

// The writer names a committed run's file by the URL of the object that
// holds its bytes: fetched by any S3 client, it is what was committed.
func TestWhereIsTheURLOfTheObjectHoldingTheFile(t *testing.T) {
	is := is.New(t)
	srv := serve(t, "where")
	b := connect(t)
	for _, dir := range []string{"s3://where", "s3://where/team/runs"} {
		url := commitAt(t, b, dir, "r1", "{\"r\":1}\n")
		is.True(strings.HasPrefix(url, dir+"/.attempt-")) // in the attempt the commit names
		bucket, key, _ := strings.Cut(strings.TrimPrefix(url, "s3://"), "/")
		out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
		is.NoErr(err)
		data, err := io.ReadAll(out.Body)
		out.Body.Close()
		is.NoErr(err)
		is.Equal(string(data), "{\"r\":1}\n") // the object is the file
	}
}

func TestCanonicalIsTheOneSpellingOfAPlaceAndRefusesTheRest(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"s3://team-evidence", "s3://team-evidence"},
		{"s3://team-evidence/", "s3://team-evidence"},
		{"s3://team.evidence/runs", "s3://team.evidence/runs"},
		{"s3://team-evidence/prod/runs/", "s3://team-evidence/prod/runs"},
		{"s3://team-evidence/prod/.hidden", "s3://team-evidence/prod/.hidden"},
		{"S3://team-evidence/runs", ""},
		{"s3:/team-evidence/runs", ""},
		{"s3://", ""},
		{"s3://ab", ""},
		{"s3://Team/runs", ""},
		{"s3://-team/runs", ""},
		{"s3://team_evidence/runs", ""},
		{"s3://team-evidence//runs", ""},
		{"s3://team-evidence/runs//", ""},
		{"s3://team-evidence/../runs", ""},
		{"s3://team-evidence/./runs", ""},
		{"s3://team-evidence/runs?x=1", ""},
		{"s3://team-evidence/runs#x", ""},
		{"s3://team-evidence/r%2Fs", ""},
		{"s3://team-evidence/r\\s", ""},
		{"s3://team-evidence/r\x00s", ""},
		{"s3://team-evidence/runs/.attempt-0123/x", ""},
		{"s3://team-evidence/runs/.pending-x", ""},
		{"/var/evidence", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			got, err := s3store.Canonical(tt.in)
			if tt.want == "" {
				is.True(errors.Is(err, ports.ErrStoreURL))
				return
			}
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
}

// Connect asks nothing of a store, but finds out at once that the
// environment names no credentials: a fault of the configuration, found
// before any call, in words that name no file.
func TestConnectRefusesAnEnvironmentWithoutRegionOrCredentials(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		s3test.Unsetenv(t, k)
	}
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	tests := []struct {
		name string
		env  map[string]string
		want error
	}{
		{"no region", map[string]string{"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}, ports.ErrStoreConfig},
		{"no credentials", map[string]string{"AWS_REGION": "us-east-1"}, ports.ErrNoCredentials},
		{"half a key", map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "k"}, ports.ErrNoCredentials},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, err := s3store.Connect(context.Background())
			is.True(errors.Is(err, tt.want))
			is.True(!strings.Contains(err.Error(), string(os.PathSeparator)+"tmp")) // no path of the machine
		})
	}
}

// Reach is one listing of the place: nil where the store serves it, and
// otherwise the ports' word for why not, never a verdict about what the
// place holds.
func TestReachAsksOnceAndSaysWhyAStoreDoesNotServeAPlace(t *testing.T) {
	srv := serve(t, "reach")
	var requests atomic.Int64
	proxy := srv.Proxy(t, func(*http.Request) s3test.Fault { requests.Add(1); return s3test.Pass })
	tests := []struct {
		name     string
		endpoint string
		secret   string
		url      string
		want     error
	}{
		{"served", proxy, srv.Secret, "s3://reach/runs", nil},
		{"a bucket's root", proxy, srv.Secret, "s3://reach", nil},
		{"no such bucket", proxy, srv.Secret, "s3://nothing-here/runs", ports.ErrNoBucket},
		{"credentials refused", proxy, "not-the-secret", "s3://reach/runs", ports.ErrStoreDenied},
		{"no server there", "http://127.0.0.1:1", srv.Secret, "s3://reach/runs", ports.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv.Env(t, srv.Access, tt.secret)
			t.Setenv("AWS_ENDPOINT_URL_S3", tt.endpoint)
			b := connect(t)
			before := requests.Load()
			err := b.Reach(context.Background(), tt.url)
			if tt.want == nil {
				is.NoErr(err)
			} else {
				is.True(errors.Is(err, tt.want))
			}
			if tt.endpoint == proxy {
				is.Equal(requests.Load()-before, int64(1)) // one request
			}
		})
	}
}
