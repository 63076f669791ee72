package s3store_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/matryer/is"

	"github.com/metricproof/metricproof/adapters/s3store"
	"github.com/metricproof/metricproof/adapters/s3store/s3test"
	"github.com/metricproof/metricproof/ports"
)

var runNames = []string{ports.ResultFile, ports.ReceiptFile, ports.ChecksumsFile}

// commitRun commits a run of runFiles(runID) in dir.
func commitRun(t *testing.T, store ports.EvidenceStore, dir, runID string) {
	t.Helper()
	w, err := store.OpenWriter(dir)
	if err == nil {
		defer w.Close()
		if err = w.Stage(runFiles(runID)); err == nil {
			err = w.Commit(runID)
		}
	}
	if err != nil {
		t.Fatalf("commit %s: %v", runID, err)
	}
}

// appendLine appends line to the ledger rel, whatever its last line.
func appendLine(store ports.LedgerStore, rel, line string) error {
	l, err := store.OpenLedger(rel)
	if err != nil {
		return err
	}
	defer l.Close()
	held, err := l.Lock(context.Background(), 10*time.Second)
	if err != nil {
		return err
	}
	defer held.Release()
	return held.Append(func([]byte) ([]byte, error) { return []byte(line), nil })
}

// files lists every file under dir on disk, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// everyUse is each use of a store the app makes, each returning the
// error it met; a use that got an answer where an error was due says
// what the answer was.
func everyUse() []struct {
	name string
	use  func(s *s3store.Store) error
} {
	ctx := context.Background()
	return []struct {
		name string
		use  func(s *s3store.Store) error
	}{
		{"read a run", func(s *s3store.Store) error {
			run, err := s.ReadRun(".", "r1", runNames, 1024)
			if err == nil {
				return fmt.Errorf("a verdict: %+v", run)
			}
			return err
		}},
		{"list the runs", func(s *s3store.Store) error {
			runs, err := s.ListRuns(".")
			if err == nil {
				return fmt.Errorf("a listing: %v", runs)
			}
			return err
		}},
		{"ask whether a run ID is taken", func(s *s3store.Store) error {
			w, err := s.OpenWriter(".")
			if err != nil {
				return err
			}
			exists, err := w.Exists("r2")
			if err == nil {
				return fmt.Errorf("an answer: %v", exists)
			}
			return err
		}},
		{"stage a run", func(s *s3store.Store) error {
			w, err := s.OpenWriter(".")
			if err != nil {
				return err
			}
			return w.Stage(runFiles("r2"))
		}},
		{"read the ledger's last line", func(s *s3store.Store) error {
			last, err := s.LastLine(ctx, "ledger")
			if err == nil {
				return fmt.Errorf("a line: %q", last)
			}
			return err
		}},
		{"append a record", func(s *s3store.Store) error { return appendLine(s, "ledger", "two\n") }},
		{"scan the ledger", func(s *s3store.Store) error {
			return s.ScanLedger(ctx, "ledger", func([]byte) error { return errors.New("a line was read") })
		}},
		{"check readiness", func(s *s3store.Store) error { return s.Ready(ctx) }},
	}
}

func TestAStoreThatRefusesGivesItsReasonNeverAVerdictAndNothingIsWritten(t *testing.T) {
	srv := serve(t, "refuse")
	seed := open(t, "s3://refuse/p")
	commitRun(t, seed, ".", "r1")
	if err := appendLine(seed, "ledger", "one\n"); err != nil {
		t.Fatal(err)
	}
	before := files(t, srv.Root)
	tests := []struct {
		name           string
		url            string
		access, secret string
		want           error
	}{
		{"a wrong secret", "s3://refuse/p", srv.Access, "not-the-secret", ports.ErrPermission},
		{"an unknown access key", "s3://refuse/p", "nobody", "not-the-secret", ports.ErrPermission},
		{"a bucket that does not exist", "s3://no-such-bucket/p", srv.Access, srv.Secret, ports.ErrNoBucket},
	}
	for _, tt := range tests {
		for _, u := range everyUse() {
			t.Run(tt.name+": "+u.name, func(t *testing.T) {
				is := is.New(t)
				srv.Env(t, tt.access, tt.secret)
				err := u.use(open(t, tt.url))
				is.True(errors.Is(err, tt.want))                      // the reason
				is.True(!errors.Is(err, ports.ErrOutcomeUnknown))     // a refusal is an answer: nothing was written
				is.True(!strings.Contains(err.Error(), srv.Endpoint)) // no endpoint, key or SDK text in the message
			})
		}
	}
	is := is.New(t)
	is.Equal(files(t, srv.Root), before) // nothing written by any of them
}

func TestAStoreThatIsDownGivesNoVerdictAndACommitAfterItWentDownIsNotMade(t *testing.T) {
	is := is.New(t)
	srv := serve(t, "down")
	store := open(t, "s3://down/p")
	commitRun(t, store, ".", "r1")
	is.NoErr(appendLine(store, "ledger", "one\n"))
	w, err := store.OpenWriter(".")
	is.NoErr(err)
	is.NoErr(w.Stage(runFiles("late")))
	before := files(t, srv.Root)
	srv.Stop()

	err = w.Commit("late")
	is.True(errors.Is(err, ports.ErrUnavailable))     // not committed, and said so
	is.True(!errors.Is(err, ports.ErrOutcomeUnknown)) // no connection: nothing was sent
	for _, u := range everyUse() {
		t.Run(u.name, func(t *testing.T) {
			is := is.New(t)
			err := u.use(store)
			is.True(errors.Is(err, ports.ErrUnavailable)) // retryable, never a verdict
			is.True(!errors.Is(err, ports.ErrOutcomeUnknown))
		})
	}
	is.Equal(files(t, srv.Root), before) // the late run's commit was never made
}

func TestAStoreThatNeverAnswersGivesNoVerdictAndAWriteItSwallowedMayHaveLanded(t *testing.T) {
	// A server that takes the request and says nothing: each request
	// runs out its time, and a write may or may not have been done.
	srv := serve(t, "silent")
	seed := open(t, "s3://silent/p")
	commitRun(t, seed, ".", "r1")
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() { hole.Close(); conns.Wait() })
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			})
		}
	}()
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://"+hole.Addr().String())
	for _, u := range everyUse() {
		t.Run(u.name, func(t *testing.T) {
			is := is.New(t)
			store := open(t, "s3://silent/p")
			s3store.SetTimeout(store, 200*time.Millisecond)
			err := u.use(store)
			is.True(errors.Is(err, ports.ErrUnavailable)) // never a verdict
			if u.name == "stage a run" {
				is.True(errors.Is(err, ports.ErrOutcomeUnknown)) // a write was sent and never answered
			}
		})
	}
	_ = srv
}

func TestAWriteWhoseAnswerWasLostIsReadBackAndCountedOnce(t *testing.T) {
	srv := serve(t, "lost")
	lose := func(t *testing.T, match func(r *http.Request) bool, times int) {
		var mu sync.Mutex
		t.Setenv("AWS_ENDPOINT_URL_S3", srv.Proxy(t, func(r *http.Request) s3test.Fault {
			mu.Lock()
			defer mu.Unlock()
			if times != 0 && match(r) {
				times--
				return s3test.LoseAnswer
			}
			return s3test.Pass
		}))
	}
	commitPut := func(r *http.Request) bool { return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/r1") }

	t.Run("a commit whose answer was lost is this writer's, found by its retry", func(t *testing.T) {
		is := is.New(t)
		lose(t, commitPut, 1)
		store := open(t, "s3://lost/a")
		commitRun(t, store, ".", "r1") // no error: the retry's refusal found this writer's own commit
		run, err := store.ReadRun(".", "r1", runNames, 1024)
		is.NoErr(err)
		is.True(run.Exists && run.Dir)
	})

	t.Run("a commit whose answers and reads were all lost may be committed, and says so", func(t *testing.T) {
		is := is.New(t)
		lose(t, func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/r1") }, -1)
		store := open(t, "s3://lost/b")
		w, err := store.OpenWriter(".")
		is.NoErr(err)
		is.NoErr(w.Stage(runFiles("r1")))
		err = w.Commit("r1")
		is.True(errors.Is(err, ports.ErrOutcomeUnknown)) // neither "committed" nor "not committed"
		is.True(errors.Is(err, ports.ErrMaybeCommitted)) // the app's word for it: verify the run
		is.True(errors.Is(err, ports.ErrUnavailable))
		_, err = srv.Client().HeadObject(context.Background(), s3Head("lost", "b/r1"))
		is.NoErr(err) // and indeed it was: "nothing was committed" would have been false
	})

	t.Run("a commit the store failed every time is not made, and says so", func(t *testing.T) {
		is := is.New(t)
		var mu sync.Mutex
		tries := 0
		t.Setenv("AWS_ENDPOINT_URL_S3", srv.Proxy(t, func(r *http.Request) s3test.Fault {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/r1") {
				mu.Lock()
				tries++
				mu.Unlock()
				return s3test.Fail
			}
			return s3test.Pass
		}))
		store := open(t, "s3://lost/d")
		w, err := store.OpenWriter(".")
		is.NoErr(err)
		is.NoErr(w.Stage(runFiles("r1")))
		err = w.Commit("r1")
		is.True(errors.Is(err, ports.ErrUnavailable))     // retryable
		is.True(!errors.Is(err, ports.ErrOutcomeUnknown)) // every try was answered, and the read-back found nothing
		is.Equal(tries, 3)
		run, err := store.ReadRun(".", "r1", runNames, 1024)
		is.NoErr(err)
		is.True(!run.Exists)
	})

	t.Run("a record whose answer was lost lands once", func(t *testing.T) {
		is := is.New(t)
		lose(t, func(r *http.Request) bool { return r.Method == http.MethodPut }, 1)
		store := open(t, "s3://lost/c")
		is.NoErr(appendLine(store, "ledger", "one\n"))
		is.NoErr(appendLine(store, "ledger", "two\n"))
		var lines []string
		is.NoErr(store.ScanLedger(context.Background(), "ledger", func(l []byte) error { lines = append(lines, string(l)); return nil }))
		is.Equal(lines, []string{"one\n", "two\n"}) // not "one" twice
	})

	t.Run("a record whose answers and reads were all lost may remain, and says so", func(t *testing.T) {
		is := is.New(t)
		store := open(t, "s3://lost/e")
		is.NoErr(appendLine(store, "ledger", "one\n"))
		lose(t, func(r *http.Request) bool {
			return strings.HasSuffix(r.URL.Path, "/e/ledger/00000000000000000002.json")
		}, -1)
		store = open(t, "s3://lost/e")
		err := appendLine(store, "ledger", "two\n")
		is.True(errors.Is(err, ports.ErrRecordRemains)) // the answer must then be the one the record holds
		is.True(errors.Is(err, ports.ErrUnavailable))
		_, err = srv.Client().HeadObject(context.Background(), s3Head("lost", "e/ledger/00000000000000000002.json"))
		is.NoErr(err) // and indeed it remains
	})
}

func s3Head(bucket, key string) *s3.HeadObjectInput {
	return &s3.HeadObjectInput{Bucket: &bucket, Key: &key}
}
